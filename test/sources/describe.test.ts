/**
 * What the model is told about SQLite and DuckDB sources (real files): tables and views, columns
 * and types, keys, estimates, samples from the first rows; a budget that keeps the tables that
 * match the question in full and lists the rest by name; describe_table() in a real jail; and an
 * unknown table's error with the names close to it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { NotFoundError } from '../../src/errors.js'
import { Sandbox } from '../../src/index.js'
import type { Sources } from '../../src/sources/sources.js'
import { openSources } from './support.js'

let dir: string
let shop: string
let wide: string
let warehouse: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-describe-'))
  shop = join(dir, 'shop.db')
  const db = new Database(shop)
  db.exec(`
    CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, region TEXT);
    CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id), total REAL, raw BLOB);
    CREATE TABLE lines (order_id INTEGER REFERENCES orders(id), line INTEGER, sku TEXT, PRIMARY KEY (order_id, line));
    CREATE VIEW north AS SELECT * FROM customers WHERE region = 'north';
    INSERT INTO customers VALUES (1, 'Ana', 'north'), (2, 'Bo', 'south'), (3, 'Cy', 'north');
    INSERT INTO orders VALUES (1, 1, 12.5, x'00ff'), (2, 2, 7, NULL), (3, 1, NULL, NULL);
    INSERT INTO lines VALUES (1, 1, 'pen'), (1, 2, 'ink');
    ANALYZE;
  `)
  db.close()
  // 300 tables, two of which the question is about.
  wide = join(dir, 'wide.db')
  const many = new Database(wide)
  many.exec(
    'CREATE TABLE invoices (id INTEGER PRIMARY KEY, supplier_id INTEGER REFERENCES suppliers(id), amount REAL)',
  )
  many.exec('CREATE TABLE suppliers (id INTEGER PRIMARY KEY, supplier_name TEXT)')
  for (let i = 0; i < 300; i++)
    many.exec(`CREATE TABLE metric_${i} (id INTEGER PRIMARY KEY, reading REAL, taken_at TEXT, sensor TEXT)`)
  many.exec("INSERT INTO suppliers VALUES (1, 'Acme'); INSERT INTO invoices VALUES (1, 1, 99.5)")
  many.close()
  warehouse = join(dir, 'warehouse.duckdb')
  const instance = await DuckDBInstance.create(warehouse)
  const connection = await instance.connect()
  await connection.run(`
    CREATE TABLE stores (id INTEGER PRIMARY KEY, city VARCHAR);
    COMMENT ON TABLE stores IS 'One row per shop';
    CREATE TABLE sales (id INTEGER PRIMARY KEY, store_id INTEGER REFERENCES stores(id), amount DECIMAL(10, 2), day DATE);
    COMMENT ON COLUMN sales.amount IS 'In euros, tax included';
    INSERT INTO stores VALUES (1, 'Lyon'), (2, 'Oslo');
    INSERT INTO sales VALUES (1, 1, 9.99, '2024-03-01'), (2, 2, 120.00, '2024-03-02');
    CREATE VIEW big_sales AS SELECT * FROM sales WHERE amount > 100;
  `)
  connection.closeSync()
  instance.closeSync()
  writeFileSync(join(dir, 'visits.csv'), 'page,visits\n/home,10\n/about,3\n')
})

afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('describing SQLite', () => {
  let sources: Sources
  beforeAll(async () => {
    sources = await openSources([`sqlite:${shop}`])
  })
  afterAll(() => sources?.close())

  it('gives tables and views, types, keys, estimates and samples from the first rows', async () => {
    const text = await sources.describeAll()
    expect(text).toContain('Source "shop" (SQLite), 4 tables:')
    expect(text).toContain('customers (table, ~3 rows)')
    expect(text).toContain('  - id: INTEGER, primary key; e.g. 1, 2, 3')
    expect(text).toContain('  - name: TEXT, not null; e.g. "Ana", "Bo", "Cy"')
    expect(text).toContain('  - customer_id: INTEGER, not null, → customers.id; e.g. 1, 2')
    expect(text).toContain('lines (table, ~2 rows)\n  primary key (order_id, line)')
    expect(text).toContain('  - order_id: INTEGER, → orders.id')
    // A blob has no text to show; a NULL is not a sample.
    expect(text).toMatch(/^ {2}- raw: BLOB$/m)
    expect(text).toContain('  - total: REAL; e.g. 12.5, 7.0')
    expect(text).toContain('north (view)')
  })

  it('describe_table() names the close tables when one is not there', async () => {
    expect(await sources.describeTable('ORDERS')).toMatch(/^orders \(table, ~3 rows\)/)
    const error = await sources.describeTable('order').catch((e: unknown) => e)
    expect(NotFoundError.isInstance(error)).toBe(true)
    expect((error as NotFoundError).message).toBe('There is no table named "order"')
    expect((error as NotFoundError).hint).toBe("Did you mean 'orders'?")
    const far = (await sources.describeTable('zzz').catch((e: unknown) => e)) as NotFoundError
    expect(far.hint).toBe('The tables are: customers, lines, north, orders.')
  })
})

describe('samples across questions', () => {
  it("reads a table's first rows once, not again for every question, even when it has none", async () => {
    const file = join(dir, 'samples.db')
    const db = new Database(file)
    db.exec(`
      CREATE TABLE readings (id INTEGER PRIMARY KEY, sensor TEXT);
      CREATE TABLE outages (id INTEGER PRIMARY KEY, cause TEXT);
      INSERT INTO readings VALUES (1, 'north'), (2, 'south');
    `)
    db.close()
    const sources = await openSources([`sqlite:${file}`])
    try {
      const run = vi.spyOn(sources.source('samples'), 'run')
      const first = await sources.describe({ budgetChars: 10_000, question: 'readings per sensor' })
      expect(first).toContain('e.g. "north", "south"')
      expect(run).toHaveBeenCalledTimes(1)
      const second = await sources.describe({ budgetChars: 10_000, question: 'outages by cause' })
      expect(second).toContain('e.g. "north", "south"')
      expect(run).toHaveBeenCalledTimes(1)
    } finally {
      await sources.close()
    }
  })
})

describe('a schema over the budget', () => {
  let sources: Sources
  beforeAll(async () => {
    sources = await openSources([`sqlite:${wide}`])
  })
  afterAll(() => sources?.close())

  it('describes the tables that match the question, and their joins, in full; the rest by name', async () => {
    const text = await sources.describe({ budgetChars: 3000, question: 'Total invoice amount per supplier?' })
    expect(text.length).toBeLessThan(3000 + 400)
    expect(text).toMatch(/^The schema is larger than this prompt: \d+ tables that best match/)
    expect(text).toContain("describe_table('name')")
    expect(text).toContain('invoices (table)')
    expect(text).toContain('  - supplier_id: INTEGER, → suppliers.id; e.g. 1')
    expect(text).toContain('suppliers (table)')
    expect(text).toContain('  - supplier_name: TEXT; e.g. "Acme"')
    // The others by name, as many as fit, and how many more.
    expect(text).toMatch(/By name only \(describe_table\('name'\) describes one\): metric_\d+, /)
    expect(text).toMatch(/… and \d+ more$/)
    expect(text.indexOf('invoices (table)')).toBeLessThan(text.indexOf('metric_'))
  })

  it('a question on other words brings other tables first', async () => {
    const text = await sources.describe({ budgetChars: 2000, question: 'sensor readings of metric 7' })
    expect(text).toContain('metric_7 (table)')
    expect(text).not.toContain('invoices (table)')
  })

  it('all of it when it fits', async () => {
    const text = await sources.describe({ budgetChars: 1_000_000 })
    expect(text).not.toContain('By name only')
    expect(text.match(/^metric_\d+ \(table\)/gm)).toHaveLength(300)
  })
})

describe('describing DuckDB', () => {
  let sources: Sources
  beforeAll(async () => {
    sources = await openSources([`duckdb:${warehouse}`, join(dir, 'visits.csv')])
  })
  afterAll(() => sources?.close())

  it('gives a database file and data files, with comments, keys, estimates and samples', async () => {
    const text = await sources.describeAll()
    expect(text).toContain('Source "warehouse" (DuckDB), 3 tables:')
    expect(text).toContain('stores (table, ~2 rows): One row per shop')
    expect(text).toContain('  - store_id: INTEGER, → stores.id; e.g. 1, 2')
    expect(text).toContain('  - amount: DECIMAL(10,2); e.g. 9.99, 120.00 -- In euros, tax included')
    expect(text).toContain('  - day: DATE; e.g. 2024-03-01, 2024-03-02')
    expect(text).toContain('big_sales (view)')
    expect(text).toContain('Source "visits" (data files queried in place by DuckDB')
    expect(text).toContain('  - page: VARCHAR; e.g. "/home", "/about"')
  })

  it('describe_table() reaches a view, and takes the source', async () => {
    const text = await sources.describeTable('big_sales', 'warehouse')
    expect(text).toMatch(/^big_sales \(view\)/)
    expect(text).toContain('e.g. 120.00')
    const error = (await sources.describeTable('visits', 'warehouse').catch((e: unknown) => e)) as Error
    expect(error.message).toBe('There is no table named "visits"')
    expect(await sources.describeTable('visits', 'visits')).toMatch(/^visits \(view, ~2 rows\)/)
  })
})

describe('describe_table() in the sandbox', () => {
  let sandbox: Sandbox
  beforeAll(async () => {
    sandbox = await Sandbox.create({ sources: { shop: `sqlite:${shop}` } })
  })
  afterAll(() => sandbox?.kill())

  it('returns the full description, and raises with the close names', async () => {
    const execution = await sandbox.runCode(
      "print(describe_table('customers'))\ntry:\n    describe_table('customer')\nexcept Exception as e:\n    print(type(e).__name__, e)",
    )
    expect(execution.error).toBeUndefined()
    const out = execution.logs.stdout.join('')
    expect(out).toContain('customers (table, ~3 rows)\n  - id: INTEGER, primary key; e.g. 1, 2, 3')
    expect(out).toMatch(/There is no table named "customer".*'customers'/)
  })
})
