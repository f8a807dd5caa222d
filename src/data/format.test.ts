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
