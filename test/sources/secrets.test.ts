/**
 * Sources' passwords stay on the host: `analyst run` with three database sources whose passwords
 * come from the host's environment the three ways a user gives them (PGPASSWORD, `${VAR}` in the
 * URL, MYSQL_PWD), real PostgreSQL and MariaDB servers, a real jail. A cell queries all three,
 * then looks for the passwords in os.environ, in every process's environment and command line it
 * can see, and in the files of its working directory, /tmp, /home and /etc: nothing.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type MariadbServer, startMariadb } from '../../src/test/support/mariadb.js'
import { type PostgresCluster, startPostgres } from '../../src/test/support/postgres.js'

const BIN = resolve('dist/cli/bin.js')
const PASSWORDS = {
  PGPASSWORD: 'pgpass-Secret-4e1b7a',
  SHOP_PW: 'varpass-Secret-90c3d2',
  MYSQL_PWD: 'mypass-Secret-6f28e5',
}

let dir: string
let cluster: PostgresCluster
let mariadb: MariadbServer
let pgDatabase: string
let myDatabase: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-sources-secrets-'))
  ;[cluster, mariadb] = await Promise.all([startPostgres(), startMariadb()])
  const url = await cluster.createDatabase()
  pgDatabase = new URL(url).pathname.slice(1)
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query(`
    CREATE TABLE t (n int);
    INSERT INTO t VALUES (1), (2);
    CREATE ROLE by_env LOGIN PASSWORD '${PASSWORDS.PGPASSWORD}';
    CREATE ROLE by_var LOGIN PASSWORD '${PASSWORDS.SHOP_PW}';
    GRANT SELECT ON t TO by_env, by_var;
  `)
  await admin.end()
  await cluster.requirePassword(['by_env', 'by_var'])
  myDatabase = await mariadb.createDatabase()
  await mariadb.query(`
    USE \`${myDatabase}\`;
    CREATE TABLE t (n INT);
    INSERT INTO t VALUES (1), (2), (3);
    CREATE USER 'by_pwd'@'127.0.0.1' IDENTIFIED BY '${PASSWORDS.MYSQL_PWD}';
    GRANT SELECT ON \`${myDatabase}\`.* TO 'by_pwd'@'127.0.0.1';
  `)
}, 180_000)

afterAll(async () => {
  await Promise.all([cluster?.stop(), mariadb?.stop()])
  rmSync(dir, { recursive: true, force: true })
})

/**
 * The cell: it proves the sources work, then searches. The passwords reach it reversed, so that
 * its own text (which the kernel may keep in a file) is not a hit.
 */
const SEARCH = `
import os
counts = [len(sql('SELECT n FROM t', source=name)) for name in ('env', 'var', 'my')]
print('rows', counts)
secrets = [s[::-1].encode() for s in ${JSON.stringify(Object.values(PASSWORDS).map((p) => [...p].reverse().join('')))}]
hits = []
def look(where, data):
    for secret in secrets:
        if secret in data:
            hits.append(where)
look('os.environ', '\\n'.join(f'{k}={v}' for k, v in os.environ.items()).encode())
for name in ('PGPASSWORD', 'MYSQL_PWD', 'SHOP_PW'):
    if name in os.environ:
        hits.append('os.environ has ' + name)
for pid in [p for p in os.listdir('/proc') if p.isdigit()] + ['self']:
    for part in ('environ', 'cmdline'):
        try:
            with open(f'/proc/{pid}/{part}', 'rb') as f:
                look(f'/proc/{pid}/{part}', f.read())
        except OSError:
            pass
# A control: a file that holds one, to show that the search finds what is there.
with open('/tmp/control', 'wb') as f:
    f.write(secrets[0])
files = 0
for top in (os.getcwd(), '/tmp', '/home', '/etc'):
    for folder, _, names in os.walk(top):
        for name in names:
            path = os.path.join(folder, name)
            try:
                if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > 64 << 20:
                    continue
                with open(path, 'rb') as f:
                    look(path, f.read())
                files += 1
            except OSError:
                pass
print('files', files >= 20)  # the jail's /etc has a few dozen
os.remove('/tmp/control')
print('hits', hits)
`

describe('source passwords in the sandbox', () => {
  it('given by PGPASSWORD, a variable in the URL and MYSQL_PWD on the host: sql() works, and no trace of them in the sandbox', async () => {
    writeFileSync(join(dir, 'search.py'), SEARCH)
    const args = [
      BIN,
      'run',
      'search.py',
      '--data',
      `env=postgres://by_env@127.0.0.1:${cluster.port}/${pgDatabase}`,
      '--data',
      `var=postgres://by_var:\${SHOP_PW}@127.0.0.1:${cluster.port}/${pgDatabase}`,
      '--data',
      `my=mysql://by_pwd@127.0.0.1:${mariadb.port}/${myDatabase}`,
    ]
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>(
      (done) =>
        execFile(
          process.execPath,
          args,
          {
            cwd: dir,
            env: { PATH: process.env.PATH ?? '', HOME: dir, NO_COLOR: '1', ...PASSWORDS },
            timeout: 150_000,
          },
          (error, stdout, stderr) =>
            done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
    )
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toBe("rows [2, 2, 3]\nfiles True\nhits ['/tmp/control']\n")
    // Nor did the host print them.
    for (const password of Object.values(PASSWORDS)) expect(`${stdout}${stderr}`).not.toContain(password)
  }, 180_000)
})
