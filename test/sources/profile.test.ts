/**
 * The description of a source through the doors, built and spawned: `analyst profile` on a real
 * PostgreSQL (its password from ${VAR}) and on files, `analyst doctor --data` warning of a role
 * that can write, and `analyst mcp`'s list_data and profile_data through the official MCP client.
 * The password shows up in none of their outputs.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PostgresCluster, startPostgres } from '../../src/test/support/postgres.js'
import { callTool, textOf } from '../support/mcp.js'

const BIN = resolve('dist/cli/bin.js')
const RO_PASSWORD = 'ro-Prof-6c2f11'
const SU_PASSWORD = 'su-Prof-a90e53'
let dir: string
let cluster: PostgresCluster
let database: string

const env = (extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? '',
  HOME: dir,
  ANALYST_HOME: join(dir, 'home'),
  NO_COLOR: '1',
  OLLAMA_HOST: '127.0.0.1:9',
  RO_PW: RO_PASSWORD,
  SU_PW: SU_PASSWORD,
  ...extra,
})

function analyst(args: string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: dir, env: env(), timeout: 120_000 },
      (error, stdout, stderr) =>
        done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

const url = (user: string, variable: string) =>
  `shop=postgres://${user}:\${${variable}}@127.0.0.1:${cluster.port}/${database}`

/** Every file under a folder, read whole: the store, the logs. */
function everything(folder: string): string {
  let text = ''
  for (const name of readdirSync(folder)) {
    const path = join(folder, name)
    text += statSync(path).isDirectory() ? everything(path) : readFileSync(path, 'latin1')
  }
  return text
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-profile-'))
  cluster = await startPostgres()
  const admin = new pg.Client({ connectionString: await cluster.createDatabase('shop') })
  database = 'shop'
  await admin.connect()
  await admin.query(`
    CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL);
    COMMENT ON TABLE customers IS 'People who buy';
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int REFERENCES customers(id), total numeric(10, 2));
    INSERT INTO customers VALUES (1, 'Ana'), (2, 'Bo');
    INSERT INTO orders VALUES (1, 1, 12.50), (2, 2, 7.00);
    CREATE ROLE analyst_ro LOGIN PASSWORD '${RO_PASSWORD}';
    GRANT SELECT ON ALL TABLES IN SCHEMA public TO analyst_ro;
    CREATE ROLE boss LOGIN SUPERUSER PASSWORD '${SU_PASSWORD}';
  `)
  const { rows } = await admin.query('SHOW hba_file')
  const hba = rows[0].hba_file as string
  writeFileSync(hba, `host all analyst_ro,boss 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, 'utf8')}`)
  await admin.query('SELECT pg_reload_conf()')
  await admin.end()
  writeFileSync(join(dir, 'visits.csv'), 'page,visits\n/home,10\n/about,3\n')
}, 120_000)

afterAll(async () => {
  await cluster?.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('analyst profile', () => {
  it('prints a database source and a file', async () => {
    const { code, stdout, stderr } = await analyst(['profile', url('analyst_ro', 'RO_PW'), 'visits.csv'])
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toContain('visits.csv')
    expect(stdout).toContain('Source "shop" (PostgreSQL), 2 tables:')
    expect(stdout).toContain('customers (table): People who buy')
    expect(stdout).toContain('  - customer_id: integer, → customers.id; e.g. 1, 2')
    expect(stdout).toContain('  - name: text, not null; e.g. "Ana", "Bo"')
    expect(stdout + stderr).not.toContain(RO_PASSWORD)
  })

  it('--json gives the tables in the shape of every kind', async () => {
    const { code, stdout } = await analyst(['profile', url('analyst_ro', 'RO_PW'), '--json'])
    expect(code).toBe(0)
    const [source] = JSON.parse(stdout) as { names: string[]; kind: string; tables: { name: string }[] }[]
    expect(source).toMatchObject({ names: ['shop'], kind: 'postgres' })
    expect(source?.tables.map((table) => table.name)).toEqual(['customers', 'orders'])
    expect(stdout).not.toContain(RO_PASSWORD)
  })

  it('a role that can write is warned of; a wrong password is said without a stack trace', async () => {
    const writer = await analyst(['profile', url('boss', 'SU_PW')])
    expect(writer.code).toBe(0)
    expect(writer.stderr).toMatch(
      /^analyst: warning: The role of source "shop" can change data: boss is a superuser\n {2}Give Analyst a role that may only read/,
    )
    const wrong = await analyst(['profile', `shop=postgres://analyst_ro:nope@127.0.0.1:${cluster.port}/shop`])
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toMatch(
      /^analyst: PostgreSQL refused the password for postgres:\/\/analyst_ro@127\.0\.0\.1:\d+\/shop\n {2}Check the password/,
    )
    expect(wrong.stderr).not.toMatch(/\n\s+at /)
    expect(wrong.stderr).not.toContain('nope')
  })
})

describe('analyst doctor --data', () => {
  it('warns of a role that can write, and passes a read-only one', async () => {
    const { stdout } = await analyst(['doctor', '--json', '--data', url('boss', 'SU_PW')])
    const { checks } = JSON.parse(stdout) as {
      checks: { name: string; ok: boolean; detail: string; fix?: string; essential: boolean }[]
    }
    expect(checks.find((check) => check.name === 'source shop')).toEqual({
      name: 'source shop',
      ok: false,
      detail: 'the role can change data: boss is a superuser',
      fix: expect.stringMatching(/^Give Analyst a role that may only read/),
      essential: false,
    })
    const readOnly = await analyst(['doctor', '--data', url('analyst_ro', 'RO_PW')])
    expect(readOnly.stdout).toContain('✓ source shop: postgres, read-only: analyst_ro may only read')
    expect(stdout + readOnly.stdout).not.toContain(SU_PASSWORD)
    // Two whole doctor runs (each starts a sandbox): over a minute on a loaded machine.
  }, 180_000)
})

describe('analyst mcp with a source', () => {
  it('list_data shows the source and its tables; profile_data a source, a table, and the close names', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp', '--data', url('analyst_ro', 'RO_PW'), '--data', 'visits.csv'],
      env: env(),
      cwd: dir,
      stderr: 'pipe',
    })
    let stderr = ''
    transport.stderr?.on('data', (chunk) => {
      stderr += String(chunk)
    })
    const client = new Client({ name: 'profile-test', version: '1.0.0' })
    await client.connect(transport)
    try {
      expect(client.getInstructions()).toContain('sql(query, source=None, params=None)')
      const listed = textOf(await callTool(client, 'list_data'))
      expect(listed).toContain('data/visits.csv')
      expect(listed).toContain('Source "shop" (PostgreSQL), 2 tables:')
      expect(listed).toContain('  - total: numeric(10,2); e.g. 12.50, 7.00')
      const source = textOf(await callTool(client, 'profile_data', { name: 'shop' }))
      expect(source).toContain('orders (table)')
      const table = textOf(await callTool(client, 'profile_data', { name: 'customers' }))
      expect(table).toMatch(/^customers \(table\): People who buy/)
      const missing = await callTool(client, 'profile_data', { name: 'customer' })
      expect(missing.isError).toBe(true)
      expect(textOf(missing)).toContain("Did you mean 'customers'?")
      const ran = textOf(
        await callTool(client, 'run_python', {
          code: "print(sql('SELECT count(*) AS n FROM orders').n[0])\nprint(describe_table('orders').splitlines()[0])",
        }),
      )
      expect(ran).toContain('[stdout]\n2\norders (table)')
      expect(listed + source + table + ran + stderr).not.toContain(RO_PASSWORD)
    } finally {
      await client.close()
    }
    expect(everything(join(dir, 'home'))).not.toContain(RO_PASSWORD)
  })
})
