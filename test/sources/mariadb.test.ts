/**
 * MySQL-protocol sources against a real MariaDB server (a throwaway one on 127.0.0.1) with two
 * users: a read-only one and one with every privilege, FILE included. Types and NULLs, the caps,
 * every refused statement tried with every privilege (the data is unchanged and no file written
 * afterwards), a timeout and an abort that end the query on the server, a connection killed
 * mid-query, a bad URL and a wrong password, and no password in any message.
 */
import { existsSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Sources } from '../../src/sources/sources.js'
import { type MariadbServer, startMariadb } from '../../src/test/support/mariadb.js'
import { waitFor } from '../support/wait.js'
import { drain, openSources, options } from './support.js'

const RO_PASSWORD = 'ro-Pw-5d1c0e'
const SU_PASSWORD = 'su-Pw-8a7f62'

let server: MariadbServer
let database: string
let readOnly: Sources
let superuser: Sources
const marker = `/tmp/analyst-mariadb-refused-${process.pid}`

beforeAll(async () => {
  server = await startMariadb()
  database = await server.createDatabase()
  await server.query(`
    USE \`${database}\`;
    CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(50) NOT NULL) COMMENT 'People who buy';
    CREATE TABLE orders (
      id INT PRIMARY KEY, customer_id INT, qty INT, price DOUBLE, total DECIMAL(30, 10) COMMENT 'With tax',
      day DATE, at DATETIME(3), at_ts TIMESTAMP NULL DEFAULT NULL, paid BOOLEAN, meta JSON, ref UUID, raw BLOB,
      big BIGINT, note VARCHAR(20), clock TIME,
      FOREIGN KEY (customer_id) REFERENCES customers (id));
    INSERT INTO customers VALUES (1, 'Ana'), (2, 'Bo');
    SET time_zone = '+02:00';
    INSERT INTO orders VALUES
      (1, 1, 3, 2.5, 12345678901.0123456789, '2024-01-02', '2024-01-02 03:04:05.5', '2024-01-02 03:04:05', TRUE,
       '{"a": [1, 2]}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', X'0102FF', 9007199254740993, 'é', '01:02:03'),
      (2, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
      (3, 1, -4, -1.5, 0.5, NULL, NULL, NULL, FALSE, '[1]', NULL, NULL, -3, NULL, NULL);
    SET time_zone = SYSTEM;
    CREATE FUNCTION bump() RETURNS INT MODIFIES SQL DATA BEGIN INSERT INTO customers VALUES (99, 'Eve'); RETURN 1; END;
    CREATE USER 'analyst_ro'@'127.0.0.1' IDENTIFIED BY '${RO_PASSWORD}';
    GRANT SELECT ON \`${database}\`.* TO 'analyst_ro'@'127.0.0.1';
    CREATE USER 'boss'@'127.0.0.1' IDENTIFIED BY '${SU_PASSWORD}';
    GRANT ALL PRIVILEGES ON *.* TO 'boss'@'127.0.0.1' WITH GRANT OPTION;
    ANALYZE TABLE customers, orders;
  `)
  const env = { RO_PW: RO_PASSWORD, SU_PW: SU_PASSWORD }
  readOnly = await openSources(
    [`shop=mariadb://analyst_ro:\${RO_PW}@127.0.0.1:${server.port}/${database}`],
    { maxRows: 50, maxBytes: 5000 },
    env,
  )
  superuser = await openSources([`shop=mysql://boss:\${SU_PW}@127.0.0.1:${server.port}/${database}`], {}, env)
}, 120_000)

afterAll(async () => {
  await readOnly?.close()
  await superuser?.close()
  await server?.stop()
})

/** The queries still running on the server, from SHOW PROCESSLIST. */
async function running(pattern: string): Promise<string[]> {
  const rows = (await server.query('SHOW FULL PROCESSLIST')) as { Info: string | null; Command: string }[]
  return rows
    .filter((row) => row.Command === 'Query' && row.Info?.includes(pattern))
    .map((row) => row.Info as string)
}

describe('MariaDB', () => {
  it('keeps the types, and NULL apart from values', async () => {
    const { columns, types } = await drain(
      await readOnly.run({ query: 'SELECT * FROM orders ORDER BY id' }, options()),
    )
    expect(types).toEqual({
      id: 'int',
      customer_id: 'int',
      qty: 'int',
      price: 'float',
      total: 'decimal',
      day: 'date',
      at: 'timestamp',
      at_ts: 'timestamptz',
      paid: 'bool',
      meta: 'json',
      ref: 'uuid',
      raw: 'bytes',
      big: 'int',
      note: 'text',
      clock: 'time',
    })
    expect(columns.qty).toEqual([3, null, -4])
    expect(columns.price).toEqual([2.5, null, -1.5])
    expect(columns.total).toEqual(['12345678901.0123456789', null, '0.5000000000'])
    expect(columns.day).toEqual(['2024-01-02', null, null])
    expect(columns.at).toEqual(['2024-01-02T03:04:05.500', null, null])
    expect(columns.at_ts).toEqual(['2024-01-02T01:04:05+00:00', null, null])
    expect(columns.paid).toEqual([true, null, false])
    expect(columns.meta).toEqual([{ a: [1, 2] }, null, [1]])
    expect(columns.ref).toEqual(['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', null, null])
    expect(columns.raw).toEqual([Buffer.from([1, 2, 255]).toString('base64'), null, null])
    expect(columns.big).toEqual(['9007199254740993', null, -3])
    expect(columns.note).toEqual(['é', null, null])
    expect(columns.clock).toEqual(['01:02:03', null, null])
  })

  it('binds parameters, and streams past one batch', async () => {
    const bound = await drain(
      await superuser.run({ query: 'SELECT name FROM customers WHERE id = ?', params: [2] }, options()),
    )
    expect(bound.columns.name).toEqual(['Bo'])
    const many = await superuser.run({ query: 'SELECT seq AS n FROM seq_1_to_25000' }, options())
    const { columns } = await drain(many)
    expect(columns.n).toHaveLength(25000)
    expect(columns.n?.at(-1)).toBe(25000)
    expect(many.summary().truncated).toBeUndefined()
  })

  it('stops at the row cap and the byte cap and says so', async () => {
    const byRows = await readOnly.run({ query: 'SELECT seq FROM seq_1_to_100000' }, options())
    expect((await drain(byRows)).columns.seq).toHaveLength(50)
    expect(byRows.summary().truncated).toMatchObject({ by: 'rows', limit: 50 })
    expect(byRows.summary().truncated?.message).toMatch(/Aggregate in SQL/)
    const byBytes = await readOnly.run({ query: "SELECT REPEAT('x', 200) AS s FROM seq_1_to_40" }, options())
    const rows = (await drain(byBytes)).columns.s?.length ?? 0
    expect(rows).toBeGreaterThan(10)
    expect(rows).toBeLessThan(40)
    expect(byBytes.summary().truncated?.by).toBe('bytes')
    expect((await drain(await readOnly.run({ query: 'SELECT 1 AS one' }, options()))).columns.one).toEqual([
      1,
    ])
  })

  it('refuses file access, writes and several statements, even with every privilege', async () => {
    for (const [query, rule] of [
      ["SELECT LOAD_FILE('/etc/passwd')", /LOAD_FILE\(\) reads the server's files/],
      [
        'SELECT User, authentication_string FROM mysql.user',
        /mysql\.user holds the accounts' password hashes/,
      ],
      ['SELECT * FROM `mysql`.`global_priv`', /mysql\.global_priv holds/],
      [`SELECT * FROM customers INTO OUTFILE '${marker}'`, /INTO OUTFILE writes files/],
      [`SELECT name FROM customers LIMIT 1 INTO DUMPFILE '${marker}'`, /INTO DUMPFILE/],
      ['SELECT 1 INTO @x', /INTO/],
      [`SELECT 1 /*! INTO OUTFILE '${marker}' */`, /executable comments/],
      ["LOAD DATA INFILE '/etc/passwd' INTO TABLE customers", /LOAD DATA reads/],
      ["LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE customers", /LOAD DATA reads/],
      ["INSERT INTO customers VALUES (9, 'Eve')", /INSERT is not a query/],
      ["UPDATE customers SET name = 'x'", /UPDATE is not a query/],
      ['DELETE FROM customers', /DELETE is not a query/],
      ['DROP TABLE orders', /not a query/],
      ['CREATE TABLE stolen AS SELECT * FROM customers', /not a query/],
      ['SET SESSION max_statement_time = 0', /not a query/],
      ['CALL nothing()', /not a query/],
      ['SELECT 1; SELECT 2', /one a call/],
      ['SELEC 1', /SELEC is not a query/],
      ['SELECT FROM WHERE', /could not be parsed/],
    ] as const) {
      await expect(superuser.run({ query }, options()), query).rejects.toThrow(rule)
    }
    // Behind the parser, the transaction itself is read-only.
    await expect(superuser.run({ query: 'SELECT bump()' }, options())).rejects.toThrow(/read-only|READ ONLY/i)
    expect(existsSync(marker)).toBe(false)
    const [counts] = (await server.query(
      `SELECT (SELECT COUNT(*) FROM \`${database}\`.customers) AS c, (SELECT COUNT(*) FROM \`${database}\`.orders) AS o`,
    )) as { c: number; o: number }[]
    expect(counts).toEqual({ c: 2, o: 3 })
  })

  it('kills a query on the server at its timeout', async () => {
    const began = Date.now()
    await expect(superuser.run({ query: 'SELECT SLEEP(60)' }, options(2000))).rejects.toThrow(
      /time limit \(2 s\)/,
    )
    expect(Date.now() - began).toBeLessThan(30_000)
    await waitFor(async () => (await running('SLEEP(60)')).length === 0, {
      what: 'no SLEEP(60) left on the server',
    })
    expect((await drain(await superuser.run({ query: 'SELECT 2 AS two' }, options()))).columns.two).toEqual([
      2,
    ])
  })

  it('kills a query on the server when its signal aborts', async () => {
    const controller = new AbortController()
    const query = superuser.run({ query: 'SELECT SLEEP(61)' }, options(120_000, controller.signal))
    query.catch(() => {})
    await waitFor(async () => (await running('SLEEP(61)')).length === 1, { what: 'SLEEP(61) to run' })
    controller.abort()
    await expect(query).rejects.toThrow(/cancelled/)
    await waitFor(async () => (await running('SLEEP(61)')).length === 0, {
      what: 'no SLEEP(61) left on the server',
    })
  })

  it('says clearly when the server drops the connection mid-query, and goes on', async () => {
    const query = readOnly.run({ query: 'SELECT SLEEP(62)' }, options())
    query.catch(() => {})
    await waitFor(async () => (await running('SLEEP(62)')).length === 1, { what: 'SLEEP(62) to run' })
    const rows = (await server.query('SHOW FULL PROCESSLIST')) as { Id: number; Info: string | null }[]
    const id = rows.find((row) => row.Info?.includes('SLEEP(62)'))?.Id
    await server.query(`KILL CONNECTION ${Number(id)}`)
    await expect(query).rejects.toThrow(/went away during the query/)
    expect(
      (await drain(await readOnly.run({ query: 'SELECT 3 AS three' }, options()))).columns.three,
    ).toEqual([3])
  })

  it('explains a wrong password, a wrong database and a server that is not there, without the password', async () => {
    const wrong = 'Not-The-Pw-37'
    const failure = await openSources([
      `mysql://analyst_ro:${wrong}@127.0.0.1:${server.port}/${database}`,
    ]).catch((e) => e)
    expect(failure.name).toBe('UnauthorizedError')
    expect(failure.message).toMatch(/refused the user or password/)
    expect(`${failure.message} ${failure.hint} ${failure.stack}`).not.toContain(wrong)
    const noDatabase = await openSources([`mysql://boss:${SU_PASSWORD}@127.0.0.1:${server.port}/nope`]).catch(
      (e) => e,
    )
    expect(noDatabase.message).toMatch(/no such database/)
    expect(`${noDatabase.message} ${noDatabase.hint} ${noDatabase.stack}`).not.toContain(SU_PASSWORD)
    const nobody = await openSources([`mysql://analyst_ro:${RO_PASSWORD}@127.0.0.1:1/${database}`]).catch(
      (e) => e,
    )
    expect(nobody.message).toMatch(/cannot be reached/)
    expect(`${nobody.message} ${nobody.hint} ${nobody.stack}`).not.toContain(RO_PASSWORD)
  })

  it('keeps the password out of query errors', async () => {
    const error = await readOnly
      .run({ query: `SELECT \`${RO_PASSWORD}\` FROM customers` }, options())
      .catch((e) => e)
    expect(error.message).toMatch(/Unknown column/)
    expect(`${error.message} ${error.hint} ${error.stack}`).not.toContain(RO_PASSWORD)
  })

  it('tells whether the user can write', async () => {
    expect((await readOnly.writeAccess())[0]?.access).toMatchObject({ canWrite: false })
    expect((await superuser.writeAccess())[0]?.access).toMatchObject({
      canWrite: true,
      reason: /ALL PRIVILEGES/,
    })
  })
})
