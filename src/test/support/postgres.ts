/**
 * A throwaway PostgreSQL server for tests and benchmarks: Debian's `postgresql` binaries, a cluster
 * made with `initdb` in a temporary folder, started on 127.0.0.1 at a free port, removed by
 * `stop()`. PostgreSQL refuses to run as root, so as root the cluster belongs to `nobody`.
 * @module
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { freePort } from './ports.js'

export interface PostgresCluster {
  /** postgres://… of a database of this server. @default the `postgres` database */
  url(database?: string): string
  port: number
  /** A new, empty database; resolves to its URL. */
  createDatabase(name?: string): Promise<string>
  /** These roles must then sign in with their password over TCP (the cluster trusts everyone else). */
  requirePassword(roles: string[]): Promise<void>
  /** Stops the server (a fast shutdown: connections are ended), keeping its data for `resume`. */
  halt(): Promise<void>
  /** Starts a halted server again, on the same port with the same data. */
  resume(): Promise<void>
  /** Stops the server and removes its folder. */
  stop(): Promise<void>
}

/** The folder with `initdb` and `postgres`: ANALYST_PG_BIN, else the newest /usr/lib/postgresql/N/bin. */
export function postgresBin(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ANALYST_PG_BIN) return env.ANALYST_PG_BIN
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : []
  if (!versions[0]) {
    throw new Error(
      'PostgreSQL is not installed: run `node scripts/setup.mjs --test` (it installs Debian\'s "postgresql"), or set ANALYST_PG_BIN',
    )
  }
  return join(root, versions[0], 'bin')
}

let databases = 0

/** The URL of a database of the server on 127.0.0.1 at `port`, as its superuser. */
export function postgresUrl(port: number, database = 'postgres'): string {
  return `postgres://postgres@127.0.0.1:${port}/${database}`
}

/**
 * A new, empty database on the server at `port`; resolves to its URL. The default name is unique
 * to this process and call, and random: files of a run share a server (shared-postgres.ts).
 */
export async function createDatabase(
  port: number,
  name = `analyst_${process.pid}_${++databases}_${randomBytes(3).toString('hex')}`,
): Promise<string> {
  const client = new pg.Client({ connectionString: postgresUrl(port) })
  await client.connect()
  try {
    await client.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`)
  } finally {
    await client.end()
  }
  return postgresUrl(port, name)
}

/**
 * Resolves once the server at `port` takes connections; rejects with the last refusal after
 * `timeoutMs`, or at once with `exited`'s error (the server's process ended).
 */
export async function untilAccepting(
  port: number,
  timeoutMs: number,
  exited?: Promise<never>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let ended = false
  exited?.catch(() => {
    ended = true
  })
  for (;;) {
    const client = new pg.Client({ connectionString: postgresUrl(port) })
    try {
      await (exited ? Promise.race([client.connect(), exited]) : client.connect())
      await client.end()
      return
    } catch (error) {
      await client.end().catch(() => {})
      if (ended || Date.now() > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

/**
 * Starts a new cluster. `durable: false` (the default, for tests) turns off fsync; a benchmark
 * that compares stores keeps PostgreSQL's defaults. `port`: one chosen before (freePort), for a
 * caller that tells others where the server will be before it is up.
 */
export async function startPostgres(
  options: { durable?: boolean; port?: number } = {},
): Promise<PostgresCluster> {
  const bin = postgresBin()
  const dir = mkdtempSync(join(tmpdir(), 'analyst-pg-'))
  const data = join(dir, 'data')
  // As root: run as nobody, in a folder nobody owns.
  const asUser = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}
  if (asUser.uid !== undefined) {
    chownSync(dir, asUser.uid, asUser.gid as number)
    chmodSync(dir, 0o700)
  }
  const port = options.port ?? (await freePort())
  let child: ChildProcess | undefined
  // The test process ends without stop() (a crash, a killed worker): no server or folder left.
  const kill = () => {
    child?.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    // Not execFileSync: the run's shared server (postgres-setup.ts) is made in vitest's own process.
    await promisify(execFile)(
      join(bin, 'initdb'),
      ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'],
      { ...asUser, cwd: dir },
    )
    const settings = [
      'listen_addresses=127.0.0.1',
      `port=${port}`,
      `unix_socket_directories=${dir}`,
      'max_connections=200',
      ...(options.durable ? [] : ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off']),
    ]
    const url = (database = 'postgres') => postgresUrl(port, database)
    /** Starts the server on the cluster's folder and port; resolves once it takes connections. */
    const launch = async (): Promise<ChildProcess> => {
      const started = spawn(join(bin, 'postgres'), ['-D', data, ...settings.flatMap((s) => ['-c', s])], {
        ...asUser,
        cwd: dir,
        stdio: ['ignore', 'ignore', 'pipe'],
      })
      child = started
      let log = ''
      started.stderr?.on('data', (chunk: Buffer) => {
        log = (log + chunk.toString()).slice(-4000)
      })
      const exited = new Promise<never>((_, reject) =>
        started.once('exit', (code) => reject(new Error(`postgres exited (${code}): ${log}`))),
      )
      exited.catch(() => {})
      await untilAccepting(port, 60_000, exited)
      return started
    }
    /** Fast shutdown (SIGINT: sessions are ended, 57P01), or SIGKILL where it does not end in time. */
    const halt = async (server: ChildProcess) => {
      if (server.exitCode !== null || server.signalCode !== null) return
      const gone = new Promise((resolve) => server.once('exit', resolve))
      server.kill('SIGINT')
      // A server that does not stop within a deadline (a machine too busy) is killed.
      const timer = setTimeout(() => server.kill('SIGKILL'), 20_000)
      await gone
      clearTimeout(timer)
    }
    process.once('exit', kill)
    let started = await launch()
    return {
      port,
      url,
      createDatabase: (name) => createDatabase(port, name),
      async requirePassword(roles) {
        const client = new pg.Client({ connectionString: url() })
        await client.connect()
        try {
          const hba = (await client.query('SHOW hba_file')).rows[0].hba_file as string
          // Read and written as the server's user: the file is the cluster's, under its folder.
          writeFileSync(
            hba,
            `host all ${roles.join(',')} 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, 'utf8')}`,
          )
          await client.query('SELECT pg_reload_conf()')
        } finally {
          await client.end()
        }
        // The reload is asynchronous: wait until a wrong password is refused.
        const deadline = Date.now() + 30_000
        for (;;) {
          const probe = new pg.Client({
            connectionString: `postgres://${roles[0]}:wrong@127.0.0.1:${port}/postgres`,
          })
          const refused = await probe.connect().then(
            () => probe.end().then(() => false),
            () => true,
          )
          if (refused) return
          if (Date.now() > deadline) throw new Error('password authentication did not come into force')
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      },
      halt: () => halt(started),
      async resume() {
        started = await launch()
      },
      async stop() {
        process.removeListener('exit', kill)
        await halt(started)
        rmSync(dir, { recursive: true, force: true })
      },
    }
  } catch (error) {
    kill()
    process.removeListener('exit', kill)
    throw error
  }
}
