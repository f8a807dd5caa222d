/**
 * What the model is told about PostgreSQL and MariaDB sources, against real servers (throwaway,
 * on 127.0.0.1) as a read-only role with a password: keys, estimates from the catalog, samples
 * (PostgreSQL's statistics for analysed tables, the first rows otherwise), comments, schemas,
 * views; describe_table(); the warning for a role that can write; and the password nowhere.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Sources, type SourceWarning } from '../../src/sources/sources.js'
import { parseSource } from '../../src/sources/spec.js'
import { type MariadbServer, startMariadb } from '../../src/test/support/mariadb.js'
import { type SharedPostgres, sharedPostgres } from '../../src/test/support/shared-postgres.js'
import { openSources } from './support.js'

const RO_PASSWORD = 'ro-Desc-91ab3c'
const SU_PASSWORD = 'su-Desc-4e77d0'
const env = { RO_PW: RO_PASSWORD, SU_PW: SU_PASSWORD }

describe('describing PostgreSQL', () => {
  let cluster: SharedPostgres
  let database: string
  let readOnly: Sources

  beforeAll(async () => {
    cluster = await sharedPostgres()
    const url = await cluster.createDatabase()
    database = new URL(url).pathname.slice(1)
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    await admin.query(`
      CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, segment text);
      COMMENT ON TABLE customers IS 'People who buy';
      CREATE TABLE orders (id int PRIMARY KEY, customer_id int NOT NULL REFERENCES customers(id), total numeric(10, 2), day date);
      COMMENT ON COLUMN orders.total IS 'With tax';
      CREATE TABLE lines (order_id int REFERENCES orders(id), line int, sku text, PRIMARY KEY (order_id, line));
      CREATE SCHEMA audit;
      CREATE TABLE audit.events (id bigint PRIMARY KEY, kind text);
      CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
      CREATE TABLE secret (id int);
      INSERT INTO customers SELECT i, 'customer ' || i, CASE WHEN i % 3 = 0 THEN 'corporate' ELSE 'retail' END
        FROM generate_series(1, 300) i;
      INSERT INTO orders SELECT i, 1 + i % 300, (i % 50) * 2.5, date '2024-01-01' + i % 30 FROM generate_series(1, 2000) i;
      INSERT INTO lines VALUES (1, 1, 'pen'), (1, 2, 'ink');
      ANALYZE customers; ANALYZE orders;
      INSERT INTO audit.events VALUES (1, 'login'), (2, 'logout');
      CREATE ROLE analyst_ro LOGIN PASSWORD '${RO_PASSWORD}';
      GRANT USAGE ON SCHEMA audit TO analyst_ro;
      GRANT SELECT ON customers, orders, lines, big_orders, audit.events TO analyst_ro;
      CREATE ROLE boss LOGIN SUPERUSER PASSWORD '${SU_PASSWORD}';
    `)
    await admin.end()
    readOnly = await openSources(
      [`shop=postgres://analyst_ro:\${RO_PW}@127.0.0.1:${cluster.port}/${database}`],
      {},
      env,
    )
  }, 120_000)

  afterAll(async () => {
    await readOnly?.close()
  })

  it('gives keys, estimates, samples and comments; only what the role may read', async () => {
    const text = await readOnly.describeAll()
    expect(text).toContain('Source "shop" (PostgreSQL), 5 tables:')
    expect(text).toContain('customers (table, ~300 rows): People who buy')
    // Statistics: the most common values first.
    expect(text).toMatch(/ {2}- segment: text; e\.g\. "retail", "corporate"\n/)
    expect(text).toMatch(/ {2}- id: integer, primary key; e\.g\. \d+, \d+, \d+/)
    expect(text).toContain('orders (table, ~2,000 rows)')
    expect(text).toMatch(/ {2}- customer_id: integer, not null, → customers\.id; e\.g\. /)
    expect(text).toMatch(/ {2}- total: numeric\(10,2\); e\.g\. [\d.]+, [\d.]+, [\d.]+ -- With tax/)
    expect(text).toMatch(/ {2}- day: date; e\.g\. 2024-01-\d\d/)
    // Never analysed: no estimate, samples from its first rows.
    expect(text).toContain('lines (table)\n  primary key (order_id, line)')
    expect(text).toContain('  - sku: text; e.g. "pen", "ink"')
    expect(text).toContain('audit.events (table)')
    expect(text).toContain('  - kind: text; e.g. "login", "logout"')
    expect(text).toContain('big_orders (view)')
    expect(text).not.toContain('secret')
    expect(text).not.toContain(RO_PASSWORD)
  })

  it('describe_table() finds a table by its bare name, samples a view, and names close tables', async () => {
    expect(await readOnly.describeTable('events')).toMatch(/^audit\.events \(table\)/)
    expect(await readOnly.describeTable('big_orders')).toMatch(/e\.g\. \d+/)
    const error = (await readOnly.describeTable('customer').catch((e: unknown) => e)) as { hint: string }
    expect(error.hint).toBe("Did you mean 'customers'?")
  })

  it('the prompt keeps what matches the question when the budget is small', async () => {
    const text = await readOnly.describe({ budgetChars: 700, question: 'How many lines per order?' })
    expect(text).toContain('lines (table)')
    expect(text).toContain('orders (table, ~2,000 rows)')
    expect(text).toMatch(/By name only .*customers/)
    expect(text + (await readOnly.describe({ budgetChars: 12_000 }))).not.toContain(RO_PASSWORD)
  })

  it('warns when the role can write, and not when it may only read', async () => {
    expect(await readOnly.warnings()).toEqual([])
    const told: SourceWarning[] = []
    const superuser = await Sources.open(
      [parseSource(`shop=postgres://boss:\${SU_PW}@127.0.0.1:${cluster.port}/${database}`, env)],
      { onWarning: (warning) => told.push(warning) },
    )
    await superuser.close()
    expect(told).toEqual([
      {
        source: 'shop',
        message: 'The role of source "shop" can change data: boss is a superuser',
        hint: expect.stringMatching(/^Give Analyst a role that may only read/),
      },
    ])
    expect(JSON.stringify(told)).not.toContain(SU_PASSWORD)
  })
})

describe('describing MariaDB', () => {
  let server: MariadbServer
  let database: string
  let readOnly: Sources

  beforeAll(async () => {
    server = await startMariadb()
    database = await server.createDatabase()
    await server.query(`
      USE \`${database}\`;
      CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(50) NOT NULL) COMMENT 'People who buy';
      CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT NOT NULL, total DECIMAL(10, 2) COMMENT 'With tax',
        raw BLOB, FOREIGN KEY (customer_id) REFERENCES customers (id));
      CREATE TABLE items (order_id INT, line INT, sku VARCHAR(10), PRIMARY KEY (order_id, line),
        FOREIGN KEY (order_id) REFERENCES orders (id));
      CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
      INSERT INTO customers VALUES (1, 'Ana'), (2, 'Bo'), (3, 'Cy');
      INSERT INTO orders VALUES (1, 1, 12.50, X'00FF'), (2, 2, 120.00, NULL);
      INSERT INTO items VALUES (1, 1, 'pen'), (1, 2, 'ink');
      ANALYZE TABLE customers, orders, items;
      CREATE USER 'analyst_ro'@'127.0.0.1' IDENTIFIED BY '${RO_PASSWORD}';
      GRANT SELECT ON \`${database}\`.* TO 'analyst_ro'@'127.0.0.1';
      CREATE USER 'boss'@'127.0.0.1' IDENTIFIED BY '${SU_PASSWORD}';
      GRANT ALL PRIVILEGES ON \`${database}\`.* TO 'boss'@'127.0.0.1';
    `)
    readOnly = await openSources(
      [`shop=mariadb://analyst_ro:\${RO_PW}@127.0.0.1:${server.port}/${database}`],
      {},
      env,
    )
  }, 120_000)

  afterAll(async () => {
    await readOnly?.close()
    await server?.stop()
  })

  it('gives keys, estimates, samples and comments', async () => {
    const text = await readOnly.describeAll()
    expect(text).toContain('Source "shop" (MySQL/MariaDB), 4 tables:')
    expect(text).toContain('customers (table, ~3 rows): People who buy')
    expect(text).toContain('  - name: varchar(50), not null; e.g. "Ana", "Bo", "Cy"')
    expect(text).toContain('  - customer_id: int(11), not null, → customers.id; e.g. 1, 2')
    expect(text).toContain('  - total: decimal(10,2); e.g. 12.50, 120.00 -- With tax')
    expect(text).toMatch(/^ {2}- raw: blob$/m)
    expect(text).toContain('items (table, ~2 rows)\n  primary key (order_id, line)')
    expect(text).toContain('big_orders (view)')
    expect(text).not.toContain(RO_PASSWORD)
  })

  it('describe_table() of a view, and of a table that is not there', async () => {
    expect(await readOnly.describeTable('big_orders')).toContain('e.g. 120.00')
    const error = (await readOnly.describeTable('item').catch((e: unknown) => e)) as { hint: string }
    expect(error.hint).toBe("Did you mean 'items'?")
  })

  it('warns when the grants allow writes', async () => {
    expect(await readOnly.warnings()).toEqual([])
    const writer = await Sources.open(
      [parseSource(`shop=mariadb://boss:\${SU_PW}@127.0.0.1:${server.port}/${database}`, env)],
      {},
    )
    try {
      const [warning] = await writer.warnings()
      expect(warning?.message).toMatch(
        /^The role of source "shop" can change data: the role's grants allow writes: GRANT ALL PRIVILEGES/,
      )
      expect(JSON.stringify(warning)).not.toContain(SU_PASSWORD)
    } finally {
      await writer.close()
    }
  })
})
