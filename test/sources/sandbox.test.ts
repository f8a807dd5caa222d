/**
 * Sources end to end through the library: `Sandbox.create({ sources })` with a real SQLite file
 * and a CSV queried in place by DuckDB on the host, sql() in a real jail, the rows as a DataFrame
 * with pandas' own numbers to compare against.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Sandbox } from '../../src/index.js'

describe('sources through Sandbox.create', () => {
  let dir: string
  let sandbox: Sandbox

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'analyst-sources-sandbox-'))
    const db = join(dir, 'shop.db')
    execFileSync('/usr/bin/python3', [
      '-c',
      [
        'import sqlite3, sys',
        'c = sqlite3.connect(sys.argv[1])',
        "c.execute('CREATE TABLE customers (id INTEGER PRIMARY KEY, segment TEXT)')",
        "c.executemany('INSERT INTO customers VALUES (?, ?)', [(1, 'retail'), (2, 'corporate'), (3, 'retail')])",
        'c.commit()',
      ].join('\n'),
      db,
    ])
    writeFileSync(join(dir, 'orders.csv'), 'order_id,customer_id,amount\n1,1,10.5\n2,2,20\n3,3,\n4,1,4.5\n')
    sandbox = await Sandbox.create({ sources: { shop: `sqlite:${db}`, orders: join(dir, 'orders.csv') } })
  })

  afterAll(async () => {
    await sandbox?.kill()
    rmSync(dir, { recursive: true, force: true })
  })

  it('answers a question over two sources with sql(), in numbers equal to pandas on the same rows', async () => {
    const execution = await sandbox.runCode(
      [
        "customers = sql('SELECT id, segment FROM customers', source='shop')",
        "totals = sql('SELECT customer_id, SUM(amount) AS total, COUNT(amount) AS n FROM orders GROUP BY customer_id ORDER BY customer_id', source='orders')",
        "joined = totals.merge(customers, left_on='customer_id', right_on='id')",
        "print(joined.groupby('segment')['total'].sum().to_dict())",
        'print(dict(totals.dtypes.astype(str)), totals.total.isna().tolist())',
      ].join('\n'),
    )
    expect(execution.error).toBeUndefined()
    expect(execution.logs.stdout).toEqual([
      "{'corporate': 20.0, 'retail': 15.0}\n",
      "{'customer_id': 'Int64', 'total': 'Float64', 'n': 'Int64'} [False, False, True]\n",
    ])
    expect(execution.queries.map((q) => [q.source, q.rows])).toEqual([
      ['shop', 3],
      ['orders', 3],
    ])
  })

  it('refuses a write in the cell, and the file is unchanged', async () => {
    const refused = await sandbox.runCode('sql("DELETE FROM customers", source=\'shop\')')
    expect(refused.error?.name).toBe('QueryError')
    expect((await sandbox.runCode("len(sql('SELECT * FROM customers', source='shop'))")).text).toBe('3')
  })

  it('needs the source named when there are several', async () => {
    const execution = await sandbox.runCode("sql('SELECT 1')")
    expect(execution.error?.name).toBe('QueryError')
    expect(execution.error?.value).toMatch(/shop|orders/)
  })
})
