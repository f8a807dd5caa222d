import { describe, expect, it } from 'vitest'
import { estimateTokens, formatProfiles, joinHints } from './format.js'
import type { ColumnProfile, DatasetProfile } from './types.js'

function column(name: string, dtype = 'int64', extra: Partial<ColumnProfile> = {}): ColumnProfile {
  return { name, dtype, nulls: 0, distinct: 10, min: 1, max: 10, mean: 5.5, samples: [1, 2, 3], ...extra }
}

function profile(
  name: string,
  columns: ColumnProfile[],
  extra: Partial<DatasetProfile> = {},
): DatasetProfile {
  return {
    path: `/tmp/${name}`,
    name,
    format: 'csv',
    bytes: 100,
    rows: 10,
    columns,
    sampleRows: [Object.fromEntries(columns.map((c) => [c.name, 1]))],
    warnings: [],
    readCall: `pd.read_csv('data/${name}')`,
    ...extra,
  }
}

describe('formatProfiles', () => {
  it('gives each file a section with its read call, columns, samples and warnings', () => {
    const text = formatProfiles([
      profile(
        'a.csv',
        [
          column('id'),
          column('city', 'object', {
            top: [{ value: 'Oslo', count: 4 }],
            distinct: 3,
            min: undefined,
            max: undefined,
          }),
        ],
        {
          warnings: ["'id' has -999 in 2 rows"],
        },
      ),
    ])
    expect(text).toContain("## data/a.csv (CSV) — 10 rows × 2 columns\ndf = pd.read_csv('data/a.csv')")
    expect(text).toContain("- 'id' int64: 1 … 10, mean 5.5")
    expect(text).toContain("top 'Oslo' 4")
    expect(text).toContain("Warnings:\n- 'id' has -999 in 2 rows")
    expect(text).toContain('Sample rows:\nid | city')
  })

  it('points a file kept on the host to its SQL table, not to data/', () => {
    const text = formatProfiles([
      profile('orders.csv', [column('id'), column('amount', 'float64')], { rows: 6000, sqlTable: 'orders' }),
    ])
    expect(text).toContain(
      '## orders.csv: too large for the sandbox, kept on the host as the SQL table orders',
    )
    expect(text).toContain('sql("SELECT … FROM orders")')
    expect(text).toContain('about 6,000 rows; columns: id, amount')
    expect(text).not.toContain('pd.read_csv')
  })

  it('marks estimated row counts and distinct counts', () => {
    const text = formatProfiles([
      profile('big.csv', [column('x', 'int64', { distinctEstimated: true, min: undefined, distinct: 5 })], {
        rows: 123456,
        rowsEstimated: true,
      }),
    ])
    expect(text).toContain('~123,456 rows')
  })

  it('stays within the budget per file, shrinking by whole lines', () => {
    const wide = profile(
      'wide.csv',
      Array.from({ length: 500 }, (_, i) => column(`column_number_${i}`, i % 3 ? 'float64' : 'object')),
      { warnings: Array.from({ length: 40 }, (_, i) => `warning number ${i} about something in the data`) },
    )
    for (const tokensPerFile of [100, 300, 1500, 4000]) {
      const text = formatProfiles([wide], { tokensPerFile })
      expect(estimateTokens(text)).toBeLessThanOrEqual(tokensPerFile)
      expect(text).toContain("df = pd.read_csv('data/wide.csv')")
    }
    const text = formatProfiles([wide], { tokensPerFile: 1500 })
    expect(text).toMatch(/Columns \(333 float64, 167 object\):/)
    expect(text).toMatch(/more warnings\)/)
  })

  it('names one variable per table when there are several, valid in Python and distinct', () => {
    const text = formatProfiles([
      profile('Sales 2024.csv', [column('a')]),
      profile('sales_2024.tsv', [column('b')]),
      profile('2023.csv', [column('c')]),
      profile('import.json', [column('d')]),
    ])
    expect(text.match(/^\w+ = pd\.\w+/gm)).toEqual([
      'sales_2024 = pd.read_csv',
      'sales_2024_2 = pd.read_csv',
      'df_2023 = pd.read_csv',
      'df_import = pd.read_csv',
    ])
  })

  it('says why a file could not be profiled', () => {
    const text = formatProfiles([
      profile('gone.csv', [], { error: 'No such file: /tmp/gone.csv. Check the path.' }),
    ])
    expect(text).toBe(
      '## data/gone.csv — could not be profiled\nNo such file: /tmp/gone.csv. Check the path.',
    )
  })

  it('lists the columns files share, and flags dtypes that differ', () => {
    const hints = joinHints([
      profile('orders.csv', [column('order_id'), column('customer_id')]),
      profile('customers.csv', [column('customer_id', 'object'), column('name', 'object')]),
      profile('items.csv', [column('order_id'), column('sku', 'object')]),
    ])
    expect(hints).toEqual([
      "- orders.csv, items.csv: 'order_id' int64",
      "- orders.csv, customers.csv: 'customer_id' int64/object (dtypes differ: convert before merging)",
    ])
    expect(formatProfiles([profile('a.csv', [column('k')]), profile('b.csv', [column('k')])])).toContain(
      "## Columns shared between files (possible join keys)\n- a.csv, b.csv: 'k' int64",
    )
  })

  it('gives each sheet of a workbook its own part of the section', () => {
    const sheet = (name: string) => ({
      name,
      rows: 3,
      columns: [column('id')],
      sampleRows: [],
      warnings: [],
      readCall: `pd.read_excel('data/b.xlsx', sheet_name='${name}')`,
    })
    const text = formatProfiles([
      profile('b.xlsx', [column('id')], { format: 'excel', sheets: [sheet('One'), sheet('Two')] }),
    ])
    expect(text).toContain('(Excel workbook, 2 sheets')
    expect(text).toContain(
      "## data/b.xlsx [sheet 'Two'] (Excel) — 3 rows × 1 columns\nb_two = pd.read_excel('data/b.xlsx', sheet_name='Two')",
    )
  })
})

describe('formatProfiles for R', () => {
  it('reads each file in R: readr with the delimiter, encoding and decimal mark pandas needed', () => {
    const text = formatProfiles(
      [
        profile('a.csv', [column('id'), column('when', 'datetime64[ns]', { nulls: 1, samples: [null] })]),
        profile('b.csv', [column('flag', 'bool', { samples: [true, false] })], {
          delimiter: ';',
          encoding: 'cp1252',
          readCall: "pd.read_csv('data/b.csv', sep=';', encoding='cp1252', decimal=',', header=None)",
          warnings: [
            "'d' holds dates as text (2024-01-05 … 2024-03-01): convert with pd.to_datetime(df['d'], dayfirst=True)",
            "'n' is mostly numbers (90%) but has text, so pandas keeps it as object: pd.to_numeric(df['n'], errors='coerce') turns the text into NaN",
            "'p' holds numbers stored as text with symbols such as $ or %: strip them, then pd.to_numeric(df['p'].str.replace(r'[^0-9.eE+-]', '', regex=True))",
          ],
        }),
        profile('c.tsv', [column('x')], { format: 'tsv', delimiter: '\t' }),
      ],
      { language: 'r' },
    )
    expect(text).toContain('a <- readr::read_csv("data/a.csv", show_col_types = FALSE)')
    expect(text).toContain(
      'b <- readr::read_delim("data/b.csv", delim = ";", col_names = FALSE, locale = readr::locale(encoding = "windows-1252", decimal_mark = ","), show_col_types = FALSE)',
    )
    expect(text).toContain('c <- readr::read_tsv("data/c.tsv", show_col_types = FALSE)')
    expect(text).toContain("- 'id' dbl: 1 … 10")
    expect(text).toContain("- 'when' dttm, 1 null")
    expect(text).toMatch(/'flag' lgl.*e\.g\. TRUE, FALSE/)
    expect(text).toContain("convert with lubridate::dmy(df[['d']])")
    expect(text).toContain("as.numeric(df[['n']]) turns the text into NA")
    expect(text).toContain("'p' holds numbers stored as text with symbols such as $ or % (convert it in R)")
    expect(text).not.toMatch(/pd\.|pandas|NaN|True/)
  })

  it('reads workbooks with readxl, JSON with jsonlite, and keeps sql() for files kept on the host', () => {
    const book = profile('book.xlsx', [column('a')], {
      format: 'excel',
      sheets: [
        { name: 'Q1', rows: 10, columns: [column('a')], sampleRows: [], warnings: [], readCall: '' },
        { name: 'Q2', rows: 10, columns: [column('b')], sampleRows: [], warnings: [], readCall: '' },
      ],
    })
    const text = formatProfiles(
      [
        book,
        profile('events.ndjson', [column('id')], { format: 'ndjson', compression: 'gzip' }),
        profile('big.csv', [column('id')], { rows: 6000, sqlTable: 'big' }),
      ],
      { language: 'r' },
    )
    expect(text).toContain('readxl::excel_sheets("data/book.xlsx")')
    expect(text).toContain('book_q1 <- readxl::read_excel("data/book.xlsx")')
    expect(text).toContain('book_q2 <- readxl::read_excel("data/book.xlsx", sheet = "Q2")')
    expect(text).toContain('[sheet "Q2"]')
    expect(text).toContain('events <- jsonlite::stream_in(gzfile("data/events.ndjson"), verbose = FALSE)')
    expect(text).toContain('sql("SELECT … FROM big")')
    expect(text).not.toContain('pd.')
  })
})
