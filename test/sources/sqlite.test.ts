/**
 * SQLite sources against real files: types and NULLs, the caps, refused statements (the file is
 * unchanged after them), a timeout and an abort that end the query at once, bad files.
 */
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Sources } from '../../src/sources/sources.js'
import { drain, openSources, options } from './support.js'

let dir: string
let file: string
let sources: Sources
let mtime: number

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-sqlite-'))
  file = join(dir, 'shop.db')
  const db = new Database(file)
  db.exec(`
    CREATE TABLE orders (
      id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), qty INTEGER, price REAL,
      total DECIMAL(10,2), day DATE, at TIMESTAMP, paid BOOLEAN, meta JSON, ref UUID, raw BLOB, big BIGINT);
    CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
    INSERT INTO customers VALUES (1, 'Ana'), (2, 'Bo');
  `)
  db.prepare('INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').run(
    1,
    1,
    3,
    2.5,
    '10.25',
    '2024-01-02',
    '2024-01-02 03:04:05',
    1,
    '{"a": [1, 2]}',
    'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11',
    Buffer.from([1, 2, 255]),
    9007199254740993n,
  )
  db.prepare('INSERT INTO orders (id, customer_id) VALUES (2, 2)').run()
  const many = db.prepare('INSERT INTO customers VALUES (?, ?)')
  for (let i = 3; i <= 50; i++) many.run(i, `customer ${i} ${'x'.repeat(100)}`)
  db.close()
  mtime = statSync(file).mtimeMs
  sources = await openSources([`sqlite:${file}`], { maxRows: 20, maxBytes: 1_000_000 })
})

afterAll(async () => {
  await sources?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('SQLite', () => {
  it('names the source after the file', () => {
    expect(sources.sources).toEqual([{ name: 'shop', kind: 'sqlite' }])
  })

  it('keeps the types, and NULL apart from values', async () => {
    const { columns, types } = await drain(
      await sources.run({ query: 'SELECT * FROM orders ORDER BY id' }, options()),
    )
    expect(types).toMatchObject({
      id: 'int',
      qty: 'int',
      price: 'float',
      total: 'decimal',
      day: 'date',
      at: 'timestamp',
      paid: 'bool',
      meta: 'json',
      ref: 'uuid',
      raw: 'bytes',
      big: 'int',
    })
    expect(columns.qty).toEqual([3, null])
    expect(columns.price).toEqual([2.5, null])
    expect(columns.total).toEqual(['10.25', null])
    expect(columns.day).toEqual(['2024-01-02', null])
    expect(columns.at).toEqual(['2024-01-02T03:04:05', null])
    expect(columns.paid).toEqual([true, null])
    expect(columns.meta).toEqual([{ a: [1, 2] }, null])
    expect(columns.ref).toEqual(['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', null])
    expect(columns.raw).toEqual([Buffer.from([1, 2, 255]).toString('base64'), null])
    expect(columns.big).toEqual(['9007199254740993', null])
  })

  it('types expressions from their values, and binds parameters', async () => {
    const { columns, types } = await drain(
      await sources.run(
        { query: 'SELECT count(*) AS n, avg(price) AS mean, ? AS label FROM orders', params: ['x'] },
        options(),
      ),
    )
    expect(types).toEqual({ n: 'int', mean: 'float', label: 'text' })
    expect(columns).toEqual({ n: [2], mean: [2.5], label: ['x'] })
    const named = await drain(
      await sources.run({ query: 'SELECT name FROM customers WHERE id = @id', params: { id: 2 } }, options()),
    )
    expect(named.columns.name).toEqual(['Bo'])
  })

  it('stops at the row cap and the byte cap and says so', async () => {
    const byRows = await sources.run({ query: 'SELECT id FROM customers' }, options())
    expect((await drain(byRows)).columns.id).toHaveLength(20)
    expect(byRows.summary().truncated).toMatchObject({ by: 'rows', limit: 20 })
    expect(byRows.summary().truncated?.message).toMatch(/Aggregate in SQL/)

    const small = await openSources([`sqlite:${file}`], { maxBytes: 1000 })
    try {
      const byBytes = await small.run({ query: 'SELECT name FROM customers' }, options())
      const rows = (await drain(byBytes)).columns.name?.length ?? 0
      expect(rows).toBeGreaterThan(2)
      expect(rows).toBeLessThan(20)
      expect(byBytes.summary()).toMatchObject({ rows, truncated: { by: 'bytes', limit: 1000 } })
      // All of it when it fits: no truncation.
      const all = await small.run({ query: 'SELECT id FROM customers WHERE id < 5' }, options())
      expect((await drain(all)).columns.id).toEqual([1, 2, 3, 4])
      expect(all.summary().truncated).toBeUndefined()
    } finally {
      await small.close()
    }
  })

  it('refuses writes, ATTACH, PRAGMA, VACUUM INTO and several statements; the file is unchanged', async () => {
    const target = join(dir, 'copy.db')
    for (const [query, rule] of [
      ["INSERT INTO customers VALUES (100, 'Eve')", /refused/],
      ['DELETE FROM customers', /refused/],
      ['DROP TABLE orders', /refused/],
      [`ATTACH '${join(dir, 'other.db')}' AS other`, /not a query/],
      ['PRAGMA query_only = OFF', /not a query/],
      [`VACUUM INTO '${target}'`, /not a query/],
      ['SELECT 1; DELETE FROM customers', /one a call/],
      ['SELEC 1', /could not be parsed/],
    ] as const) {
      await expect(sources.run({ query }, options()), query).rejects.toThrow(rule)
    }
    expect(existsSync(target)).toBe(false)
    expect(existsSync(join(dir, 'other.db'))).toBe(false)
    const count = await drain(await sources.run({ query: 'SELECT count(*) AS n FROM customers' }, options()))
    expect(count.columns.n).toEqual([50])
    expect(statSync(file).mtimeMs).toBe(mtime)
  })

  const endless = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c'

  it('ends a query at its timeout, and the next query runs', async () => {
    await expect(sources.run({ query: endless }, options(500))).rejects.toThrow(/time limit \(0.5 s\)/)
    // One query at a time: the next would wait forever if the endless one still ran.
    const next = await drain(await sources.run({ query: 'SELECT 1 AS one' }, options()))
    expect(next.columns.one).toEqual([1])
  })

  it('ends a query when its signal aborts', async () => {
    const controller = new AbortController()
    const running = sources.run({ query: endless }, options(60_000, controller.signal))
    setTimeout(() => controller.abort(), 200)
    await expect(running).rejects.toThrow(/cancelled/)
    const next = await drain(await sources.run({ query: 'SELECT 2 AS two' }, options()))
    expect(next.columns.two).toEqual([2])
  })

  it('says clearly when the file is missing or not a database', async () => {
    await expect(openSources([`sqlite:${join(dir, 'nope.db')}`])).rejects.toThrow(/does not exist/)
    const text = join(dir, 'notes.db')
    writeFileSync(text, 'not a database at all, just some text that is long enough to be read')
    await expect(openSources([`sqlite:${text}`])).rejects.toThrow(/cannot be opened as a SQLite database/)
  })
})
