// Every format: JSON, NDJSON, gzip and zip, Excel workbooks, Parquet. Each profile must equal what
// pandas reads with the profile's readCall (Parquet: from the converted file prepareForSandbox gives).
// The files are made and profiled once, and pandas reads them all in one process, to keep this fast.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { parquetWriteBuffer } from 'hyparquet-writer'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type DatasetProfile,
  prepareForSandbox,
  profileFiles,
  type SandboxFile,
} from '../../src/data/index.js'
import { LocalProvider, Sandbox } from '../../src/index.js'
import { writeXls, type XlsSheet } from '../support/xls.js'
import { onHost, type PandasView, pandasViews } from './pandas-truth.js'

const RECORDS = [
  { id: 1, name: 'Ann', score: 9.5, joined: '2024-01-05', vip: true, tags: 'a' },
  { id: 2, name: 'Bob', score: null, joined: '2024-02-01', vip: false, tags: 'b' },
  { id: 3, name: 'Cy', score: 7.25, joined: '2024-03-09', vip: true, tags: null },
]

/** An old .xls workbook: numbers, text (not only ASCII), dates and empty cells, in two sheets. */
const OLD_BOOK: XlsSheet[] = [
  {
    name: 'Sales',
    rows: [
      ['id', 'amount', 'when', 'region'],
      [1, 1.5, new Date(Date.UTC(2024, 0, 1)), 'North'],
      [2, null, new Date(Date.UTC(2024, 1, 29)), 'Süd'],
      [3, 3.25, new Date(Date.UTC(2024, 2, 1)), null],
    ],
  },
  {
    name: 'Regions',
    rows: [
      ['region', 'manager'],
      ['North', 'Ann'],
      ['Süd', 'Björn'],
    ],
  },
]
const TALL_BOOK: XlsSheet[] = [
  { name: 'Tall', rows: [['n', 'half'], ...Array.from({ length: 40 }, (_, i) => [i, i / 2])] },
]

const CSV = 'city,temp\nOslo,1.5\nRome,14.25\nNice,\n'
const MANY = Array.from({ length: 5000 }, (_, i) => ({ i, v: i * 1.5, s: `s${i % 13}` }))
const SAMPLING = { fullReadBytes: 16 * 1024, headBytes: 8 * 1024 }

let dir: string
const profiles = new Map<string, DatasetProfile>()
let views: Record<string, PandasView>
let parquetFile: SandboxFile

function write(name: string, content: string | Buffer | ArrayBuffer): string {
  const path = join(dir, name)
  writeFileSync(path, content instanceof ArrayBuffer ? Buffer.from(content) : content)
  return path
}

function python(code: string, ...args: string[]) {
  execFileSync('/usr/bin/python3', ['-c', code, ...args], { env: { PATH: '/usr/bin:/bin' } })
}

function makeFiles(): { normal: string[]; sampled: string[] } {
  const normal = [
    write('records.json', JSON.stringify(RECORDS)),
    write('records.jsonl', RECORDS.map((r) => JSON.stringify(r)).join('\n')),
    write('lines.json', RECORDS.map((r) => JSON.stringify(r)).join('\n')),
    write('weather.csv.gz', gzipSync(CSV)),
    write('weather-gz.csv', gzipSync(CSV)),
    write('records.json.gz', gzipSync(JSON.stringify(RECORDS))),
    write('damaged.xls', Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, 0, 0])),
    write('old-book.xls', writeXls(OLD_BOOK)),
    write('tall.xls', writeXls(TALL_BOOK)),
    write('broken.parquet', Buffer.from('PAR1 this is not parquet at all PAR0')),
    write('cut.csv.gz', gzipSync(CSV).subarray(0, 20)),
    write(
      'sales.parquet',
      parquetWriteBuffer({
        columnData: [
          { name: 'id', data: [1, 2, 3, 4], type: 'INT32' },
          { name: 'big', data: [1n, 2n, 3n, 4n], type: 'INT64' },
          { name: 'price', data: [1.5, null, 3.25, 4], type: 'DOUBLE' },
          { name: 'count', data: [1, null, 3, 4], type: 'INT32' },
          { name: 'region', data: ['North', 'South', null, 'North'], type: 'STRING' },
          { name: 'vip', data: [true, false, true, true], type: 'BOOLEAN' },
          {
            name: 'at',
            data: [
              new Date('2024-01-01T10:00:00Z'),
              new Date('2024-01-02T11:30:00Z'),
              null,
              new Date('2024-03-01T00:00:00Z'),
            ],
            type: 'TIMESTAMP',
          },
        ],
      }),
    ),
  ]
  // Zip archives and a workbook, made by Python's zipfile and pandas (the readers the sandbox uses).
  const zips = {
    'one.zip': { 'weather.csv': CSV },
    'two.zip': { 'readme.md': 'hello', 'b.csv': 'x;y\n1;2\n', 'c.csv': 'p\n1\n' },
  }
  python(
    `import json, sys, zipfile
import pandas as pd
folder = sys.argv[1]
for name, members in json.loads(sys.argv[2]).items():
    with zipfile.ZipFile(folder + '/' + name, 'w', zipfile.ZIP_DEFLATED) as z:
        for k, v in members.items():
            z.writestr(k, v)
with pd.ExcelWriter(folder + '/book.xlsx') as w:
    pd.DataFrame({'id': [1, 2, 3], 'amount': [1.5, None, 3.0], 'when': pd.to_datetime(['2024-01-01', '2024-02-01', '2024-03-01'])}).to_excel(w, sheet_name='Sales', index=False)
    pd.DataFrame({'id': [1, 2], 'region': ['North', 'South']}).to_excel(w, sheet_name='Regions', index=False)
`,
    dir,
    JSON.stringify(zips),
  )
  normal.push(join(dir, 'one.zip'), join(dir, 'two.zip'), join(dir, 'book.xlsx'))
  const sampled = [
    write('big.json', JSON.stringify(MANY)),
    write('big.ndjson', MANY.map((r) => JSON.stringify(r)).join('\n')),
  ]
  return { normal, sampled }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-formats-'))
  const { normal, sampled } = makeFiles()
  for (const p of await profileFiles(normal)) profiles.set(p.name, p)
  for (const p of await profileFiles(sampled, { limits: SAMPLING })) profiles.set(p.name, p)
  const parquet = get('sales.parquet')
  parquetFile = await prepareForSandbox(parquet)
  const calls: { key: string; call: string }[] = []
  for (const p of profiles.values()) {
    if (p.error || p.sampled) continue
    if (p.format === 'parquet') {
      const call = p.readCall.replace(`data/${parquetFile.name}`, `data/${basename(parquetFile.hostPath)}`)
      calls.push({ key: p.name, call: onHost(call, dirname(parquetFile.hostPath)) })
    } else if (p.sheets) {
      for (const sheet of p.sheets)
        calls.push({ key: `${p.name}[${sheet.name}]`, call: onHost(sheet.readCall, dir) })
    } else calls.push({ key: p.name, call: onHost(p.readCall, dir) })
  }
  views = pandasViews(calls)
}, 120_000)

afterAll(() => rmSync(dir, { recursive: true, force: true }))

function get(name: string): DatasetProfile {
  const profile = [...profiles.values()].find((p) => p.name === name || basename(p.path) === name)
  if (!profile) throw new Error(`no profile for ${name}`)
  return profile
}

function expectPandasView(
  profile: { columns: DatasetProfile['columns']; rows: number; error?: string },
  key: string,
) {
  expect(profile.error).toBeUndefined()
  const view = views[key] as PandasView
  expect(view.error).toBeUndefined()
  expect(profile.columns.map((c) => c.name)).toEqual(view.columns)
  expect(profile.columns.map((c) => c.dtype)).toEqual(view.dtypes)
  expect(profile.columns.map((c) => c.nulls)).toEqual(view.nulls)
  expect(profile.rows).toBe(view.rows)
}

describe('JSON', () => {
  it('profiles an array of records as pd.read_json reads it', () => {
    const profile = get('records.json')
    expect(profile.format).toBe('json')
    expect(profile.readCall).toBe("pd.read_json('data/records.json')")
    expectPandasView(profile, 'records.json')
  })

  it('profiles NDJSON with lines=True', () => {
    const profile = get('records.jsonl')
    expect(profile.format).toBe('ndjson')
    expect(profile.readCall).toBe("pd.read_json('data/records.jsonl', lines=True)")
    expectPandasView(profile, 'records.jsonl')
  })

  it('tells NDJSON from JSON by content when the name says .json', () => {
    expect(get('lines.json').format).toBe('ndjson')
    expectPandasView(get('lines.json'), 'lines.json')
  })

  it('samples big JSON and NDJSON and estimates their rows', () => {
    for (const profile of [get('big.json'), get('big.ndjson')]) {
      expect(profile.error).toBeUndefined()
      expect(profile.rowsEstimated).toBe(true)
      expect(Math.abs(profile.rows - MANY.length) / MANY.length).toBeLessThan(0.1)
      expect(profile.columns.map((c) => `${c.name}:${c.dtype}`)).toEqual(['i:int64', 'v:float64', 's:object'])
    }
  })
})

describe('compressed files', () => {
  it('reads gzip by its extension, and says compression= when the name does not tell', () => {
    expect(get('weather.csv.gz').compression).toBe('gzip')
    expect(get('weather.csv.gz').readCall).toBe("pd.read_csv('data/weather.csv.gz')")
    expectPandasView(get('weather.csv.gz'), 'weather.csv.gz')
    expect(get('weather-gz.csv').readCall).toBe("pd.read_csv('data/weather-gz.csv', compression='gzip')")
    expectPandasView(get('weather-gz.csv'), 'weather-gz.csv')
  })

  it('reads gzip JSON', () => {
    expect(get('records.json.gz').format).toBe('json')
    expectPandasView(get('records.json.gz'), 'records.json.gz')
  })

  it('reads a zip with one CSV, and one member of a zip with several', () => {
    const single = get('one.zip')
    expect(single.compression).toBe('zip')
    expect(single.readCall).toBe("pd.read_csv('data/one.zip')")
    expectPandasView(single, 'one.zip')
    const several = get('two.zip')
    expect(several.readCall).toBe("pd.read_csv(zipfile.ZipFile('data/two.zip').open('b.csv'), sep=';')")
    expect(several.warnings.join('\n')).toMatch(/holds 3 files/)
    expectPandasView(several, 'two.zip')
  })

  it('says what is wrong with a gzip file cut short', () => {
    const profile = get('cut.csv.gz')
    expect(profile.error).toMatch(/gzip/)
  })
})

describe('Excel', () => {
  it('profiles every sheet as pd.read_excel reads it', () => {
    const profile = get('book.xlsx')
    expect(profile.format).toBe('excel')
    expect(profile.sheets?.map((s) => s.name)).toEqual(['Sales', 'Regions'])
    expect(profile.readCall).toBe("pd.read_excel('data/book.xlsx')")
    expect(profile.sheets?.[1]?.readCall).toBe("pd.read_excel('data/book.xlsx', sheet_name='Regions')")
    expect(profile.columns.find((c) => c.name === 'when')?.dates).toEqual({
      min: '2024-01-01T00:00:00',
      max: '2024-03-01T00:00:00',
      asText: false,
    })
    for (const sheet of profile.sheets ?? []) expectPandasView(sheet, `book.xlsx[${sheet.name}]`)
  })

  it('profiles a big workbook on its first rows and takes the row count from the sheet', async () => {
    const [profile] = await profileFiles([join(dir, 'book.xlsx')], {
      limits: { excelFullBytes: 1, excelSampleRows: 2 },
    })
    const sales = profile?.sheets?.[0]
    expect(sales?.rowsEstimated).toBe(true)
    expect(sales?.rows).toBe(views['book.xlsx[Sales]']?.rows)
    expect(profile?.sampled).toBe(true)
  })

  it('profiles an old .xls workbook (read with xlrd) as pd.read_excel reads it', () => {
    const profile = get('old-book.xls')
    expect(profile.format).toBe('excel')
    expect(profile.readCall).toBe("pd.read_excel('data/old-book.xls')")
    expect(profile.sheets?.map((s) => s.name)).toEqual(['Sales', 'Regions'])
    expect(profile.columns.map((c) => `${c.name}:${c.dtype}:${c.nulls}`)).toEqual([
      'id:int64:0',
      'amount:float64:1',
      'when:datetime64[ns]:0',
      'region:object:1',
    ])
    expect(profile.columns.find((c) => c.name === 'when')?.dates).toEqual({
      min: '2024-01-01T00:00:00',
      max: '2024-03-01T00:00:00',
      asText: false,
    })
    for (const sheet of profile.sheets ?? []) expectPandasView(sheet, `old-book.xls[${sheet.name}]`)
  })

  it('profiles a big .xls workbook on its first rows and takes the row count from the sheet', async () => {
    const [profile] = await profileFiles([join(dir, 'tall.xls')], {
      limits: { excelFullBytes: 1, excelSampleRows: 5 },
    })
    expect(profile?.error).toBeUndefined()
    expect(profile?.rowsEstimated).toBe(true)
    expect(profile?.rows).toBe(40)
    expect(profile?.rows).toBe(views['tall.xls[Tall]']?.rows)
  })

  it('reads the .xls workbook in the sandbox with the read call of its profile', async () => {
    const profile = get('old-book.xls')
    const sandbox = await Sandbox.create({
      provider: new LocalProvider({ poolSize: 0 }),
      data: [await prepareForSandbox(profile).then((file) => file.hostPath)],
    })
    try {
      const sales = await sandbox.runCode(
        `import pandas as pd\ndf = ${profile.readCall}\n(df.dtypes.astype(str).tolist(), df['region'].tolist(), str(df['when'].max().date()))`,
      )
      expect(sales.error).toBeUndefined()
      expect(sales.text).toBe(
        "(['int64', 'float64', 'datetime64[ns]', 'object'], ['North', 'Süd', nan], '2024-03-01')",
      )
      const regions = await sandbox.runCode(`${profile.sheets?.[1]?.readCall}['manager'].tolist()`)
      expect(regions.text).toBe("['Ann', 'Björn']")
    } finally {
      await sandbox.kill()
    }
  })

  it('says a damaged .xls workbook cannot be read, and why', () => {
    expect(get('damaged.xls').error).toMatch(/pandas cannot read it: .*(CompDoc|OLE2|xlrd|size)/i)
  })
})

describe('Parquet', () => {
  it('profiles from metadata and gives the sandbox a copy that pandas reads with the same dtypes', async () => {
    const profile = get('sales.parquet')
    expect(profile.error).toBeUndefined()
    expect(profile.rows).toBe(4)
    expect(profile.columns.map((c) => `${c.name}:${c.dtype}:${c.nulls}`)).toEqual([
      'id:int32:0',
      'big:int64:0',
      'price:float64:1',
      'count:float64:1',
      'region:object:1',
      'vip:bool:0',
      'at:datetime64[ns]:1',
    ])
    expect(parquetFile.name).toBe(profile.name)
    if (profile.name === 'sales.parquet.pkl')
      expect(profile.readCall).toBe("pd.read_pickle('data/sales.parquet.pkl')")
    expectPandasView(profile, profile.name)
    // A second call reuses the converted copy.
    expect((await prepareForSandbox(profile)).hostPath).toBe(parquetFile.hostPath)
  })

  it('keeps the read call and the converted copy in step when the file is given a name', async () => {
    const [renamed] = await profileFiles([{ path: join(dir, 'sales.parquet'), name: 'q1 sales.parquet' }])
    const file = await prepareForSandbox(renamed as DatasetProfile)
    expect(renamed?.readCall).toBe(
      file.name === 'q1 sales.parquet'
        ? "pd.read_parquet('data/q1 sales.parquet')"
        : `pd.read_pickle('data/${file.name}')`,
    )
    expect(file.name).toBe(renamed?.name)
    if (file.name !== 'q1 sales.parquet') expect(file.name).toBe('q1 sales.parquet.pkl')
  })

  it('says a broken Parquet file is broken', () => {
    expect(get('broken.parquet').error).toMatch(/Parquet/)
  })
})
