/**
 * SQLite files, opened read-only with `query_only` on, in a child process of their own: better-sqlite3
 * is synchronous, so a long query must not run on the event loop, and it has no interrupt, so a
 * query is cancelled (a timeout, an aborted cell) by killing that process, which is then started
 * again for the next query. A worker thread could not be stopped inside a long sqlite3_step.
 * SQLite's own parser checks the statement: one, and one that only reads (`reader`, `readonly`).
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { InvalidArgumentError, NotFoundError, SandboxUnavailableError } from '../errors.js'
import type { QueryBatch, QueryColumn, QueryColumnType, QueryStream } from '../sandbox/query.js'
import { convertColumn, inferType } from './columns.js'
import { AsyncQueue } from './queue.js'
import { notOneStatement, ONLY_QUERIES, refuse, unparsable } from './refuse.js'
import type { Catalog, CatalogTable, RunOptions, Source, WriteAccess } from './source.js'
import { cappedStream, queryCancelled, queryTimeout } from './stream.js'

const BATCH_ROWS = 10_000

/** The child's program (CommonJS, run with `node -e`): opens the file, runs one query at a time. */
const CHILD = `
const Database = require(process.argv[1])
let db
try {
  db = new Database(process.argv[2], { readonly: true, fileMustExist: true })
  db.pragma('query_only = ON')
  db.prepare('SELECT count(*) FROM sqlite_schema').get()
  process.send({ type: 'ready' })
} catch (error) {
  process.send({ type: 'error', message: error.message, code: error.code }, () => process.exit(1))
}
let job
function pump() {
  const current = job
  while (current && job === current && current.credits > 0) {
    const values = current.columns.map(() => [])
    let rows = 0
    let done = false
    try {
      while (rows < current.batchRows) {
        const next = current.iterator.next()
        if (next.done) { done = true; break }
        const row = next.value
        for (let c = 0; c < row.length; c++) values[c].push(row[c])
        rows++
      }
    } catch (error) {
      job = undefined
      process.send({ type: 'error', id: current.id, message: error.message, code: error.code })
      return
    }
    current.credits--
    if (rows > 0 || done) process.send({ type: 'batch', id: current.id, rows, values, done })
    if (done) { job = undefined; return }
  }
}
function run(message) {
  let statement
  try {
    statement = db.prepare(message.sql)
  } catch (error) {
    process.send({ type: 'error', id: message.id, message: error.message, code: error.code })
    return
  }
  if (!statement.reader || !statement.readonly) {
    process.send({ type: 'refused', id: message.id, reader: statement.reader })
    return
  }
  statement.raw(true)
  statement.safeIntegers(true)
  const columns = statement.columns().map((column) => ({ name: column.name, type: column.type }))
  let iterator
  try {
    iterator = message.params === undefined ? statement.iterate() : statement.iterate(message.params)
  } catch (error) {
    process.send({ type: 'error', id: message.id, message: error.message, code: error.code })
    return
  }
  process.send({ type: 'columns', id: message.id, columns })
  job = { id: message.id, iterator, columns, credits: 2, batchRows: message.batchRows }
  pump()
}
function catalog(message) {
  try {
    const tables = db.prepare("SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name").all()
    let stats = new Map()
    try {
      // Each index's first number is the table's row count as ANALYZE saw it.
      for (const row of db.prepare('SELECT tbl, max(CAST(stat AS INTEGER)) AS n FROM sqlite_stat1 GROUP BY tbl').all()) stats.set(row.tbl, Number(row.n))
    } catch {}
    const out = tables.map((table) => {
      const columns = db.prepare('SELECT name, type, "notnull", pk FROM pragma_table_info(?)').all(table.name)
      const keys = db.prepare('SELECT id, "table", "from", "to" FROM pragma_foreign_key_list(?) ORDER BY id, seq').all(table.name)
      const foreignKeys = []
      for (const key of keys) {
        let fk = foreignKeys.find((k) => k.id === key.id)
        if (!fk) foreignKeys.push((fk = { id: key.id, columns: [], references: key.table, referencedColumns: [] }))
        fk.columns.push(key.from)
        fk.referencedColumns.push(key.to)
      }
      return {
        name: table.name,
        kind: table.type,
        columns: columns.map((c) => ({ name: c.name, type: c.type || 'ANY', nullable: !c.notnull })),
        primaryKey: columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name),
        foreignKeys: foreignKeys.map(({ id, ...rest }) => rest),
        rowEstimate: stats.get(table.name),
      }
    })
    process.send({ type: 'catalog', id: message.id, tables: out })
  } catch (error) {
    process.send({ type: 'error', id: message.id, message: error.message, code: error.code })
  }
}
process.on('message', (message) => {
  if (message.type === 'run') run(message)
  else if (message.type === 'more' && job && job.id === message.id) { job.credits++; pump() }
  else if (message.type === 'stop' && job && job.id === message.id) { job.iterator.return(); job = undefined }
  else if (message.type === 'catalog') catalog(message)
})
process.on('disconnect', () => process.exit(0))
`

type ChildMessage =
  | { type: 'ready' }
  | { type: 'error'; id?: number; message: string; code?: string }
  | { type: 'refused'; id: number; reader: boolean }
  | { type: 'columns'; id: number; columns: { name: string; type: string | null }[] }
  | { type: 'batch'; id: number; rows: number; values: unknown[][]; done: boolean }
  | { type: 'catalog'; id: number; tables: CatalogTable[] }

/** SQLite's declared type to a column type: its affinity rules, with the names that say more first. */
export function sqliteColumnType(declared: string | null): QueryColumnType | undefined {
  if (!declared) return undefined
  const type = declared.toUpperCase()
  if (type.includes('BOOL')) return 'bool'
  if (type.includes('JSON')) return 'json'
  if (type.includes('UUID')) return 'uuid'
  if (type.includes('TIMESTAMP') || type.includes('DATETIME')) return 'timestamp'
  if (type.includes('DATE')) return 'date'
  if (type.includes('INT')) return 'int'
  if (/CHAR|CLOB|TEXT/.test(type)) return 'text'
  if (type.includes('BLOB')) return 'bytes'
  if (/REAL|FLOA|DOUB/.test(type)) return 'float'
  if (/DEC|NUMERIC/.test(type)) return 'decimal'
  return undefined
}

export class SqliteSource implements Source {
  readonly kind = 'sqlite' as const
  #child: ChildProcess | undefined
  #starting: Promise<ChildProcess> | undefined
  #handlers = new Map<number, (message: ChildMessage) => void>()
  #ids = 0
  /** One query at a time: the next waits for the previous stream to end. */
  #turn: Promise<void> = Promise.resolve()

  constructor(readonly path: string) {}

  async open(): Promise<void> {
    await this.#process()
  }

  #process(): Promise<ChildProcess> {
    if (this.#child && this.#child.exitCode === null && this.#child.signalCode === null)
      return Promise.resolve(this.#child)
    this.#starting ??= this.#start().finally(() => {
      this.#starting = undefined
    })
    return this.#starting
  }

  async #start(): Promise<ChildProcess> {
    if (!existsSync(this.path)) {
      throw new NotFoundError(`The SQLite file ${this.path} does not exist`, {
        hint: 'Check the path after sqlite: (relative to the current folder, or sqlite:///ABSOLUTE/PATH).',
      })
    }
    const driver = createRequire(import.meta.url).resolve('better-sqlite3')
    const child = spawn(process.execPath, ['-e', CHILD, driver, this.path], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
    })
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2000)
    })
    child.on('message', (message: ChildMessage) => {
      if ('id' in message && message.id !== undefined) this.#handlers.get(message.id)?.(message)
    })
    await new Promise<void>((resolve, reject) => {
      const onMessage = (message: ChildMessage) => {
        if (message.type === 'ready') {
          child.off('exit', onExit)
          resolve()
        } else if (message.type === 'error' && message.id === undefined) {
          reject(
            new InvalidArgumentError(
              `${this.path} cannot be opened as a SQLite database: ${message.message}`,
              {
                hint: 'Give a SQLite database file (sqlite:PATH); for a CSV or Parquet file give its path alone.',
              },
            ),
          )
        }
      }
      const onExit = (code: number | null) =>
        reject(new SandboxUnavailableError(`The SQLite reader stopped (${code}): ${stderr.trim()}`))
      child.on('message', onMessage)
      child.once('exit', onExit)
    })
    child.on('exit', () => {
      const gone = { type: 'error', message: 'the SQLite reader stopped' } as const
      for (const [id, handler] of this.#handlers) handler({ ...gone, id })
    })
    this.#child = child
    return child
  }

  /** Cancels whatever runs: the process goes, the next query starts another. */
  #kill(): void {
    this.#child?.kill('SIGKILL')
    this.#child = undefined
  }

  async run(
    query: string,
    params: unknown[] | Record<string, unknown> | undefined,
    options: RunOptions,
  ): Promise<QueryStream> {
    const previous = this.#turn
    let release = () => {}
    this.#turn = new Promise((resolve) => {
      release = resolve
    })
    await previous
    try {
      return await this.#run(query, params, options, release)
    } catch (error) {
      release()
      throw error
    }
  }

  async #run(
    query: string,
    params: unknown[] | Record<string, unknown> | undefined,
    { signal, timeoutMs, limits }: RunOptions,
    release: () => void,
  ): Promise<QueryStream> {
    const startedAt = Date.now()
    if (signal.aborted) throw queryCancelled(signal.reason)
    const child = await this.#process()
    const id = ++this.#ids
    let stopped: Error | undefined
    let columns: QueryColumn[] | undefined
    let declared: (QueryColumnType | undefined)[] = []
    const queue = new AsyncQueue<QueryBatch>({
      onRead: () => child.connected && child.send({ type: 'more', id }),
      onReturn: () => {
        finish()
        if (child.connected) child.send({ type: 'stop', id })
      },
    })
    let ready: { resolve: () => void; reject: (error: unknown) => void } = { resolve() {}, reject() {} }
    const started = new Promise<void>((resolve, reject) => {
      ready = { resolve, reject }
    })
    const fail = (error: unknown) => {
      finish()
      ready.reject(error)
      queue.fail(error)
    }
    const stop = (error: Error) => {
      if (stopped) return
      stopped = error
      this.#kill()
      fail(error)
    }
    const timer = setTimeout(() => stop(queryTimeout(timeoutMs)), timeoutMs)
    const onAbort = () => stop(queryCancelled(signal.reason))
    signal.addEventListener('abort', onAbort, { once: true })
    let finished = false
    const finish = () => {
      if (finished) return
      finished = true
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
      this.#handlers.delete(id)
      release()
    }
    this.#handlers.set(id, (message) => {
      if (stopped) return
      switch (message.type) {
        case 'error':
          return fail(sqliteError(message.message, message.code))
        case 'refused':
          return fail(
            refuse(message.reader ? 'the statement writes' : 'the statement is not a query', ONLY_QUERIES),
          )
        case 'columns':
          declared = message.columns.map((column) => sqliteColumnType(column.type))
          columns = message.columns.map((column, c) => ({
            name: column.name,
            type: declared[c] ?? 'text',
            ...(column.type ? { sourceType: column.type } : {}),
          }))
          return
        case 'batch': {
          if (!columns) return
          const current = columns
          // Columns without a declared type (expressions) take theirs from the first batch.
          for (const [c, column] of current.entries()) {
            if (declared[c] === undefined) {
              column.type = inferType(message.values[c] ?? [])
              declared[c] = column.type
            }
          }
          const values = message.values.map((column, c) => convertColumn(current[c]?.type ?? 'other', column))
          if (message.rows > 0) queue.push({ rows: message.rows, values })
          ready.resolve()
          if (message.done) {
            finish()
            queue.end()
          }
          return
        }
      }
    })
    child.send({ type: 'run', id, sql: query, params, batchRows: BATCH_ROWS })
    await started
    return cappedStream({ columns: columns ?? [], batches: queue, limits, startedAt, signal })
  }

  async catalog(): Promise<Catalog> {
    const child = await this.#process()
    const id = ++this.#ids
    const tables = await new Promise<CatalogTable[]>((resolve, reject) => {
      this.#handlers.set(id, (message) => {
        this.#handlers.delete(id)
        if (message.type === 'catalog') resolve(message.tables)
        else if (message.type === 'error') reject(sqliteError(message.message, message.code))
      })
      child.send({ type: 'catalog', id })
    })
    return { tables }
  }

  async canWrite(): Promise<WriteAccess> {
    return { canWrite: false, reason: 'SQLite files are opened read-only, with query_only on' }
  }

  async close(): Promise<void> {
    const child = this.#child
    this.#child = undefined
    if (child && child.exitCode === null) {
      const gone = new Promise((resolve) => child.once('exit', resolve))
      child.disconnect()
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await gone
      clearTimeout(timer)
    }
  }
}

function sqliteError(message: string, code: string | undefined): Error {
  if (/more than one statement/.test(message)) return notOneStatement(2)
  if (/syntax error|incomplete input/.test(message)) return unparsable(message)
  if (code === 'SQLITE_READONLY' || /readonly|read-only|query_only/i.test(message)) {
    return refuse('the database is read-only here', ONLY_QUERIES)
  }
  if (message === 'the SQLite reader stopped') {
    return new SandboxUnavailableError('The SQLite reader stopped during the query', {
      hint: 'Run the query again; if it keeps failing, check the file.',
    })
  }
  return new InvalidArgumentError(`SQLite: ${message}`, {
    hint: 'Check the query against the schema (describe_table).',
  })
}
