// CSV and TSV files that trip readers up: for each, the profile's names, dtypes, nulls and row count
// must equal what pandas reads with the profile's own readCall (computed here by the real pandas),
// and the profile must say what is special about the file.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatasetProfile } from '../../src/data/index.js'
import { profileFiles } from '../../src/data/profile.js'
import { onHost, type PandasView, pandasViews } from './pandas-truth.js'

const CASES: Record<string, string | Buffer> = {
  'basic.csv': 'id,name,score,passed\n1,Ann,9.5,True\n2,Bob,7,False\n3,Cy,,True\n',
  'semicolon-decimal-comma.csv': 'city;temp;rain\nOslo;1,5;12\nRome;14,25;3\nNice;;0\n',
  'tabs.tsv': 'a\tb\tc\n1\tx y\t2.5\n2\tz\t3.5\n',
  'tab-named-csv.csv': 'a\tb\tc\n1\tx\t2.5\n2\tz\t3.5\n',
  'pipes.csv': 'a|b|c\n1|x|2\n3|y|4\n',
  'quoted.csv': 'id,comment,amount\n1,"Hello, world",10\n2,"She said ""hi""",20\n3,"two\nlines",30\n',
  'quote-mid-field.csv': 'id,height\n1,5\'11"\n2,6\'0"\n',
  'text-after-quote.csv': 'a,b\n"x"y,1\n"p"q,2\n',
  'crlf.csv': 'a,b\r\n1,2\r\n3,4\r\n',
  'cr-only.csv': 'a,b\r1,2\r3,4\r',
  'blank-lines.csv': '\n\na,b\n1,2\n\n\n3,4\n   \n5,6\n',
  'leading-spaces.csv': 'a,b\n  1,2\n 3, 4\n',
  'bom.csv': Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('name,val\nA,1\nB,2\n')]),
  'latin1.csv': Buffer.from('ville,prix\nMontr\xe9al,1\nQu\xe9bec,2\n', 'latin1'),
  'cp1252.csv': Buffer.from([
    ...Buffer.from('item,price\nmug,'),
    0x80,
    ...Buffer.from('5\ncup,'),
    0x80,
    ...Buffer.from('3\n'),
  ]),
  'utf16.csv': Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('a,b\n1,é\n2,ü\n', 'utf16le')]),
  'trailing-comma.csv': 'a,b,\n1,2,\n3,4,\n',
  'unnamed-index.csv': ',x,y\n0,1,2\n1,3,4\n2,5,6\n',
  'duplicates.csv': 'a,a,a.1,b,b\n1,2,3,4,5\n',
  'implicit-index.csv': 'a,b\nr1,1,2\nr2,3,4\n',
  'short-rows.csv': 'a,b,c\n1,2\n3,4,5\n',
  'ragged.csv': 'a,b\n1,2\n3,4,5\n6,7\n8,9,10,11\n',
  'bools.csv': 'x,y,z\nTrue,true,TRUE\nFalse,false,FALSE\n',
  'bool-with-na.csv': 'flag,n\nTrue,1\n,2\nFalse,3\n',
  'ints-with-na.csv': 'n,m\n1,\n2,5\nNA,6\n',
  'big-ints.csv': 'u,o,neg\n18446744073709551615,99999999999999999999999,-9223372036854775808\n1,1,1\n',
  'uint-and-negative.csv': 'v\n9223372036854775808\n-1\n',
  'infinities.csv': 'v,w\ninf,1\n-Infinity,2\n+inf,3\n',
  'numeric-header.csv': '1.5,2,3\n4,5,6\n7,8,9\n',
  'header-only.csv': 'a,b,c\n',
  'single-column.csv': 'value\n1\n2\n3\n',
  'all-missing.csv': 'a,b\n1,\n2,\n',
  'na-strings.csv': 'a,b,c\nNA,N/A,null\n1,x,None\n#N/A,y,nan\n',
  'thousands.csv': 'item,amount\na,"1,234"\nb,"12,345,678"\nc,"999"\n',
  'thousands-dot.csv': 'item;amount;rate\na;1.234,5;1,5\nb;12.345.678,25;2,25\nc;999,5;3\n',
  'dates.csv': 'when,day,value\n2024-01-05,05/01/2024,1\n2024-02-29,29/02/2024,2\n2023-12-31,31/12/2023,3\n',
  'sentinel.csv': 'station,temp\na,12.5\nb,-999\nc,14.1\nd,-999\ne,13\n',
  'mixed.csv': 'code\n1\n2\n3\n4\nunknown\n6\n7\n8\n9\n10\n',
  'currency.csv': 'product,price\na,$1.50\nb,$20.00\nc,$3.25\n',
  'unterminated.csv': 'a,b\n1,"open\n2,3\n',
  'whitespace-na.csv': 'a,b\n NA,1\nNA ,2\n',
  'plus-signs.csv': 'a,b\n+5,+1.5\n-3,-.5\n',
  'exponents.csv': 'a,b\n1e5,1E-2\n2.5e+3,3\n',
}

let dir: string
let profiles: Map<string, DatasetProfile>
let truth: Record<string, PandasView>

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-csv-cases-'))
  for (const [name, content] of Object.entries(CASES)) writeFileSync(join(dir, name), content)
  const list = await profileFiles(Object.keys(CASES).map((name) => join(dir, name)))
  profiles = new Map(list.map((p) => [p.name, p]))
  truth = pandasViews(
    list.filter((p) => !p.error).map((p) => ({ key: p.name, call: onHost(p.readCall, dir) })),
  )
})

afterAll(() => rmSync(dir, { recursive: true, force: true }))

function get(name: string): DatasetProfile {
  const profile = profiles.get(name)
  if (!profile) throw new Error(`no profile for ${name}`)
  return profile
}

describe('CSV profiles equal pandas', () => {
  for (const name of Object.keys(CASES)) {
    if (name === 'unterminated.csv') continue // pandas raises; checked below
    it(name, () => {
      const profile = get(name)
      expect(profile.error).toBeUndefined()
      const view = truth[name] as PandasView
      expect(view.error, `pandas failed on ${profile.readCall}`).toBeUndefined()
      expect(profile.columns.map((c) => c.name)).toEqual(view.columns)
      expect(profile.columns.map((c) => c.dtype)).toEqual(view.dtypes)
      expect(profile.columns.map((c) => c.nulls)).toEqual(view.nulls)
      expect(profile.rows).toBe(view.rows)
      expect(profile.rowsEstimated).toBeUndefined()
    })
  }
})

describe('what the profile says about the file', () => {
  it('names the separator, decimal mark and encoding in the read call', () => {
    expect(get('semicolon-decimal-comma.csv').readCall).toBe(
      "pd.read_csv('data/semicolon-decimal-comma.csv', sep=';', decimal=',')",
    )
    expect(get('tabs.tsv').readCall).toBe("pd.read_csv('data/tabs.tsv', sep='\\t')")
    expect(get('tab-named-csv.csv').readCall).toContain("sep='\\t'")
    expect(get('latin1.csv').readCall).toContain("encoding='latin-1'")
    expect(get('cp1252.csv').readCall).toContain("encoding='cp1252'")
    expect(get('utf16.csv').readCall).toContain("encoding='utf-16'")
    expect(get('bom.csv').encoding).toBe('UTF-8 with BOM')
    expect(get('basic.csv').readCall).toBe("pd.read_csv('data/basic.csv')")
  })

  it('reads text in its encoding', () => {
    expect(get('latin1.csv').columns[0]?.samples).toEqual(['Montréal', 'Québec'])
    expect(get('cp1252.csv').sampleRows[0]).toEqual({ item: 'mug', price: '€5' })
    expect(get('utf16.csv').columns[1]?.samples).toEqual(['é', 'ü'])
  })

  it('keeps quoted commas, quotes and line breaks inside their field', () => {
    expect(get('quoted.csv').columns[1]?.samples).toEqual(['Hello, world', 'She said "hi"', 'two\nlines'])
  })

  it('reads a header of numbers as data', () => {
    const profile = get('numeric-header.csv')
    expect(profile.readCall).toContain('header=None')
    expect(profile.warnings.join('\n')).toMatch(/header=None/)
  })

  it('skips lines with too many fields, as the read call tells pandas to', () => {
    const profile = get('ragged.csv')
    expect(profile.readCall).toContain("on_bad_lines='skip'")
    expect(profile.warnings.join('\n')).toMatch(
      /2 lines have more fields than the 2 expected \(first: line 3, 3 fields\)/,
    )
  })

  it('warns about an unterminated quote instead of failing', () => {
    const profile = get('unterminated.csv')
    expect(profile.error).toBeUndefined()
    expect(profile.warnings.join('\n')).toMatch(/never closes/)
  })

  it('warns about traps: thousands separators, dates as text, sentinels, mixed types, symbols', () => {
    expect(get('thousands-dot.csv').readCall).toContain("decimal=','")
    expect(get('thousands-dot.csv').warnings.join('\n')).toMatch(
      /'amount' holds numbers with thousands separators as text \(1\.234,5\): read with thousands='\.', decimal=','/,
    )
    expect(get('thousands.csv').warnings.join('\n')).toMatch(
      /'amount' holds numbers with thousands separators/,
    )
    const dates = get('dates.csv')
    expect(dates.columns[0]?.dates).toEqual({ min: '2023-12-31', max: '2024-02-29', asText: true })
    expect(dates.columns[1]?.dates).toEqual({
      min: '2023-12-31',
      max: '2024-02-29',
      asText: true,
      dayFirst: true,
    })
    expect(dates.warnings.join('\n')).toMatch(/dayfirst=True/)
    expect(get('sentinel.csv').warnings.join('\n')).toMatch(/'temp' has -999 in 2 rows/)
    expect(get('mixed.csv').warnings.join('\n')).toMatch(/'code' is mostly numbers \(90%\)/)
    expect(get('currency.csv').warnings.join('\n')).toMatch(
      /'price' holds numbers stored as text with symbols/,
    )
    expect(get('duplicates.csv').warnings.join('\n')).toMatch(/Duplicate column names/)
    expect(get('implicit-index.csv').warnings.join('\n')).toMatch(/as the index/)
    expect(get('unnamed-index.csv').warnings.join('\n')).toMatch(/index_col=0/)
  })

  it('computes statistics from the values', () => {
    const [id, name, score] = get('basic.csv').columns
    expect(id).toMatchObject({ min: 1, max: 3, mean: 2, distinct: 3, nulls: 0 })
    expect(name?.top?.map((t) => t.value)).toEqual(['Ann', 'Bob', 'Cy'])
    expect(score).toMatchObject({ min: 7, max: 9.5, mean: 8.25, nulls: 1 })
    expect(get('basic.csv').sampleRows[2]).toEqual({ id: 3, name: 'Cy', score: null, passed: true })
  })
})

describe('files given a name for the sandbox', () => {
  it('profiles them under that name, telling the format by it', async () => {
    const hostPath = join(dir, 'upload-7f3a')
    writeFileSync(hostPath, 'a;b\n1;2\n')
    const [profile] = await profileFiles([{ path: hostPath, name: 'prices.csv' }])
    expect(profile?.path).toBe(hostPath)
    expect(profile?.name).toBe('prices.csv')
    expect(profile?.readCall).toBe("pd.read_csv('data/prices.csv', sep=';')")
  })
})

describe('files bigger than the full-read limit', () => {
  it('samples them, counts rows exactly when cheap and estimates them otherwise', async () => {
    const path = join(dir, 'large.csv')
    let text = 'id,group,value,note\n'
    for (let i = 0; i < 60_000; i++)
      text += `${i},g${i % 7},${(i * 0.37).toFixed(2)},${i % 1000 === 0 ? '"a, b"' : 'x'}\n`
    text += '60000,g1,,late\n' // a missing value far from the head turns nothing: value is float64 anyway
    writeFileSync(path, text)
    const limits = { fullReadBytes: 64 * 1024, headBytes: 32 * 1024, pieceBytes: 4096, pieces: 8 }
    const [counted] = await profileFiles([path], { limits })
    const [estimated] = await profileFiles([path], { limits: { ...limits, exactCountBytes: 1024 } })
    const view = pandasViews([{ key: 'large', call: `pd.read_csv(${JSON.stringify(path)})` }])
      .large as PandasView
    expect(counted?.sampled).toBe(true)
    expect(counted?.rows).toBe(view.rows)
    expect(counted?.rowsEstimated).toBeUndefined()
    expect(counted?.columns.map((c) => c.dtype)).toEqual(view.dtypes)
    expect(estimated?.rowsEstimated).toBe(true)
    expect(Math.abs((estimated?.rows ?? 0) - view.rows) / view.rows).toBeLessThan(0.05)
    expect(counted?.columns[0]?.distinctEstimated).toBe(true)
  })

  it('samples files whose lines end with a lone \\r', async () => {
    const path = join(dir, 'mac.csv')
    let text = 'year,pop,country\r'
    for (let i = 0; i < 20_000; i++) text += `${1950 + (i % 60)},${i * 1000},c${i % 50}\r`
    writeFileSync(path, text)
    const [profile] = await profileFiles([path], {
      limits: { fullReadBytes: 64 * 1024, headBytes: 16 * 1024, pieceBytes: 2048 },
    })
    const view = pandasViews([{ key: 'mac', call: `pd.read_csv(${JSON.stringify(path)})` }]).mac as PandasView
    expect(profile?.error).toBeUndefined()
    expect(profile?.columns.map((c) => c.dtype)).toEqual(view.dtypes)
    expect(profile?.rowsEstimated).toBe(true)
    expect(Math.abs((profile?.rows ?? 0) - view.rows) / view.rows).toBeLessThan(0.05)
  })
})
