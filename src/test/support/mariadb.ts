/**
 * A throwaway MariaDB server for tests and benchmarks: Debian's `mariadb-server` binaries, a data
 * folder made with `mariadb-install-db` in a temporary folder, `mariadbd` started on 127.0.0.1 at
 * a free port with no configuration file of the system's, removed by `stop()`. As root, the
 * server runs as `nobody`.
 * @module
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mysql from 'mysql2/promise'
import { freePort } from './ports.js'

export interface MariadbServer {
  port: number
  /** Runs SQL as root (over the server's socket). */
  query(sql: string, values?: unknown[]): Promise<unknown[]>
  /** A new, empty database; resolves to its name. */
  createDatabase(name?: string): Promise<string>
  /** Stops the server and removes its folder. */
  stop(): Promise<void>
}

const INSTALL_DB = '/usr/bin/mariadb-install-db'
const MARIADBD = '/usr/sbin/mariadbd'

let databases = 0

export async function startMariadb(): Promise<MariadbServer> {
  if (!existsSync(MARIADBD) || !existsSync(INSTALL_DB)) {
    throw new Error(
      'MariaDB is not installed: run `node scripts/setup.mjs --test` (it installs Debian\'s "mariadb-server")',
    )
  }
  const dir = mkdtempSync(join(tmpdir(), 'analyst-mariadb-'))
  const data = join(dir, 'data')
  const socket = join(dir, 'sock')
  const root = process.getuid?.() === 0
  const user = root ? 'nobody' : (process.env.USER ?? 'nobody')
  if (root) {
    chownSync(dir, 65534, 65534)
    chmodSync(dir, 0o700)
  }
  const port = await freePort()
  let child: ChildProcess | undefined
  const kill = () => {
    child?.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    execFileSync(
      INSTALL_DB,
      [
        '--no-defaults',
        `--datadir=${data}`,
        `--user=${user}`,
        '--auth-root-authentication-method=normal',
        '--skip-test-db',
        '--skip-name-resolve',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir },
    )
    child = spawn(
      MARIADBD,
      [
        '--no-defaults',
        `--datadir=${data}`,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        `--socket=${socket}`,
        `--pid-file=${join(dir, 'mariadbd.pid')}`,
        `--tmpdir=${dir}`,
        `--user=${user}`,
        '--skip-name-resolve',
        '--skip-log-bin',
        '--innodb-buffer-pool-size=32M',
        '--innodb-log-file-size=16M',
        '--innodb-flush-log-at-trx-commit=0',
        '--max-connections=200',
      ],
      { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
    )
    let log = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-4000)
    })
    process.once('exit', kill)
    const connectRoot = () =>
      mysql.createConnection({ socketPath: socket, user: 'root', multipleStatements: true })
    const deadline = Date.now() + 60_000
    let admin: mysql.Connection
    for (;;) {
      try {
        admin = await connectRoot()
        break
      } catch (error) {
        if (child.exitCode !== null) throw new Error(`mariadbd exited (${child.exitCode}): ${log}`)
        if (Date.now() > deadline) throw error
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    const started = child
    return {
      port,
      async query(sql, values) {
        const [rows] = await admin.query(sql, values)
        return rows as unknown[]
      },
      async createDatabase(name = `analyst_${process.pid}_${++databases}`) {
        await admin.query(`CREATE DATABASE \`${name.replace(/`/g, '')}\``)
        return name
      },
      async stop() {
        process.removeListener('exit', kill)
        await admin.end().catch(() => {})
        if (started.exitCode === null && started.signalCode === null) {
          const gone = new Promise((resolve) => started.once('exit', resolve))
          started.kill('SIGTERM')
          const timer = setTimeout(() => started.kill('SIGKILL'), 20_000)
          await gone
          clearTimeout(timer)
        }
        rmSync(dir, { recursive: true, force: true })
      },
    }
  } catch (error) {
    const errorLog = join(data, `${process.env.HOSTNAME ?? ''}.err`)
    const detail = existsSync(errorLog) ? readFileSync(errorLog, 'utf8').slice(-2000) : ''
    kill()
    process.removeListener('exit', kill)
    if (detail && error instanceof Error) error.message += `\n${detail}`
    throw error
  }
}
