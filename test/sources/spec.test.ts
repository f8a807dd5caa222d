/** Parsing `--data` sources and the sources file of `analyst serve`, and keeping passwords out of sight. */
import { describe, expect, it } from 'vitest'
import { parseSourcesFile } from '../../src/sources/config.js'
import { isDatabaseUrl, parseSource, redact } from '../../src/sources/spec.js'

describe('parseSource', () => {
  it('names a database after itself, or NAME=', () => {
    expect(parseSource('postgres://ana@db:5432/shop', {})).toEqual({
      name: 'shop',
      kind: 'postgres',
      location: 'postgres://ana@db:5432/shop',
    })
    expect(parseSource('sales=postgresql://ana@db/shop', {}).name).toBe('sales')
    expect(parseSource('mariadb://ana@db:3306/crm', {}).kind).toBe('mysql')
    expect(parseSource('mysql://ana@db/crm?ssl=true', {}).name).toBe('crm')
  })

  it('keeps the password apart from the URL, from the URL, $VAR or PGPASSWORD/MYSQL_PWD', () => {
    const inUrl = parseSource('postgres://ana:s3cr%40t@db/shop', {})
    expect(inUrl.password).toBe('s3cr@t')
    expect(inUrl.location).not.toContain('s3cr')
    // biome-ignore lint/suspicious/noTemplateCurlyInString: ${VAR} is the syntax of source URLs
    const fromVar = parseSource('postgres://ana:${SHOP_PW}@db/shop', { SHOP_PW: 'hunter2' })
    expect(fromVar.password).toBe('hunter2')
    expect(fromVar.location).toBe('postgres://ana@db/shop')
    expect(parseSource('postgres://ana@db/shop', { PGPASSWORD: 'pg' }).password).toBe('pg')
    expect(parseSource('mysql://ana@db/shop', { MYSQL_PWD: 'my', PGPASSWORD: 'pg' }).password).toBe('my')
    // biome-ignore lint/suspicious/noTemplateCurlyInString: ${VAR} is the syntax of source URLs
    expect(() => parseSource('postgres://ana:${NOPE}@db/shop', {})).toThrow(/NOPE.*not set/)
  })

  it('takes SQLite and DuckDB files, relative or absolute, and data files by path', () => {
    expect(parseSource('sqlite:data/app.db', {}, '/home/ana')).toEqual({
      name: 'app',
      kind: 'sqlite',
      location: '/home/ana/data/app.db',
    })
    expect(parseSource('sqlite:///var/app.sqlite3', {}, '/x').location).toBe('/var/app.sqlite3')
    expect(parseSource('duckdb:w.duckdb', {}, '/d')).toMatchObject({
      name: 'w',
      kind: 'duckdb',
      location: '/d/w.duckdb',
    })
    expect(parseSource('/data/sales.csv.gz', {})).toMatchObject({ name: 'sales', kind: 'file' })
    expect(parseSource('2024 orders.parquet', {}, '/d')).toMatchObject({
      name: 't_2024_orders',
      location: '/d/2024 orders.parquet',
    })
    expect(parseSource('ev=/logs/events.ndjson', {})).toMatchObject({ name: 'ev', kind: 'file' })
  })

  it('explains bad sources without echoing a password', () => {
    expect(() => parseSource('postgres://ana:pw@', {})).toThrow(
      /Not a valid database URL: postgres:\/\/ana:\*\*\*@$/,
    )
    try {
      parseSource('mysql://ana:topsecret@db', {})
      expect.unreachable()
    } catch (error) {
      expect((error as Error).message).toMatch(/names no database/)
      expect((error as Error).message).not.toContain('topsecret')
      expect((error as { hint: string }).hint).toMatch(/mysql:\/\/USER@HOST/)
    }
    expect(() => parseSource('oracle://x@y/z', {})).toThrow(/does not know databases of the kind "oracle"/)
    expect(() => parseSource('notes.docx', {})).toThrow(/Not a data source/)
    expect(() => parseSource('sqlite:', {})).toThrow(/names no file/)
  })

  it('tells database URLs from files', () => {
    expect(isDatabaseUrl('shop=postgres://a@b/c')).toBe(true)
    expect(isDatabaseUrl('sqlite:x.db')).toBe(true)
    expect(isDatabaseUrl('sales.csv')).toBe(false)
  })

  it('redacts passwords in URLs', () => {
    expect(redact('postgres://ana:pw@db:5432/shop')).toBe('postgres://ana:***@db:5432/shop')
    expect(redact('postgres://ana@db/shop')).toBe('postgres://ana@db/shop')
    expect(redact('mysql://:only@db/x')).toBe('mysql://:***@db/x')
  })
})

describe('the sources file', () => {
  it('reads names, URLs, passwords from the environment and tokens', () => {
    const sources = parseSourcesFile(
      JSON.stringify({
        shop: { url: 'postgres://analyst@db:5432/shop', passwordEnv: 'SHOP_PASSWORD', tokens: ['t1'] },
        local: { url: 'sqlite:///srv/app.db' },
      }),
      { SHOP_PASSWORD: 'pw' },
    )
    expect(sources.get('shop')).toEqual({
      spec: { name: 'shop', kind: 'postgres', location: 'postgres://analyst@db:5432/shop', password: 'pw' },
      tokens: ['t1'],
    })
    expect(sources.get('local')?.spec).toMatchObject({ kind: 'sqlite', location: '/srv/app.db' })
  })

  it('names the key that is wrong', () => {
    expect(() => parseSourcesFile('{"shop": {"url": 5}}', {})).toThrow(/shop\.url/)
    expect(() => parseSourcesFile('{"shop": {"url": "postgres://a@b/c", "extra": 1}}', {})).toThrow(/shop/)
    expect(() => parseSourcesFile('{"bad name": {"url": "sqlite:x"}}', {})).toThrow(/bad name/)
    expect(() => parseSourcesFile('{"shop": {"url": "postgres://a@b/c", "passwordEnv": "PW"}}', {})).toThrow(
      /source "shop": PW is not set/,
    )
    expect(() => parseSourcesFile('{"shop": {"url": "oracle://a@b/c"}}', {})).toThrow(/source "shop"/)
    expect(() => parseSourcesFile('{', {})).toThrow(/not valid JSON/)
  })
})
