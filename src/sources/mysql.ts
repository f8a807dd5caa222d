/**
 * MySQL and MariaDB sources: each query in a `START TRANSACTION READ ONLY` with the server's
 * statement time limit (MariaDB's max_statement_time, MySQL's max_execution_time), after
 * node-sql-parser has checked it (guard-mysql.ts), streamed as arrays with the connection paused
 * while a batch waits. The driver gives big integers and decimals as strings and dates as text
 * (supportBigNumbers, dateStrings); a timeout or an aborted cell sends `KILL QUERY` from a second
 * connection, so the query ends on the server.
 * @module
 */
import mysql from 'mysql2'
import {
  AnalystError,
  ForbiddenError,
  InvalidArgumentError,
  NotFoundError,
  SandboxUnavailableError,
  UnauthorizedError,
} from '../errors.js'
import type { QueryBatch, QueryColumn, QueryColumnType, QueryStream } from '../sandbox/query.js'
import { convertColumn } from './columns.js'
import { checkMysql } from './guard-mysql.js'
import { AsyncQueue } from './queue.js'
import { ONLY_QUERIES, refuse } from './refuse.js'
import type { Catalog, CatalogTable, RunOptions, Source, WriteAccess } from './source.js'
import { redact, type SourceSpec } from './spec.js'
import { cappedStream, queryCancelled, queryTimeout } from './stream.js'
import { isoTimestamp } from './values.js'

/** How long a catalog read may take on the server. */
const CATALOG_TIMEOUT_MS = 10_000
const BATCH_ROWS = 10_000
const BINARY = 63

interface Field {
  name: string
  columnType?: number
  type?: number
  characterSet?: number
  columnLength?: number
  length?: number
  extendedTypeName?: string
  extendedFormat?: string
}

/** The column type of a result field (mysql2's type numbers, MariaDB's extended metadata). */
function fieldType(field: Field): QueryColumnType {
  if (field.extendedTypeName === 'uuid') return 'uuid'
  if (field.extendedFormat === 'json') return 'json'
  const binary = field.characterSet === BINARY
  switch (field.columnType ?? field.type) {
    case 1: // TINY: TINYINT(1) is MySQL's BOOLEAN
      return (field.columnLength ?? field.length) === 1 ? 'bool' : 'int'
    case 2:
    case 3:
    case 8:
    case 9:
    case 13:
      return 'int'
    case 4:
    case 5:
      return 'float'
    case 0:
    case 246:
      return 'decimal'
    case 10:
    case 14:
      return 'date'
    case 12:
      return 'timestamp'
    case 7:
      return 'timestamptz' // TIMESTAMP is stored in UTC; the session's time zone is UTC
    case 11:
      return 'time'
    case 245:
      return 'json'
    case 249:
    case 250:
    case 251:
    case 252:
    case 253:
    case 254:
    case 15:
      return binary ? 'bytes' : 'text'
    case 247:
    case 248:
      return 'text'
    default:
      return 'other'
  }
}

/** TINYINT(1) as a boolean; everything else as mysql2 reads it with the pool's options. */
const typeCast = (field: { type: string; length: number; string(): string | null }, next: () => unknown) => {
  if (field.type === 'TINY' && field.length === 1) {
    const text = field.string()
    return text === null ? null : text !== '0'
  }
  return next()
}

interface Connection extends mysql.PoolConnection {
  threadId: number
}

export class MysqlSource implements Source {
  readonly kind = 'mysql' as const
  #pool: mysql.Pool
  #options: mysql.ConnectionOptions
  #mariadb: boolean | undefined

  constructor(private readonly spec: SourceSpec) {
    const url = new URL(spec.location)
    this.#options = {
      host: url.hostname,
      port: url.port ? Number(url.port) : 3306,
      user: decodeURIComponent(url.username),
      password: spec.password,
      database: decodeURIComponent(url.pathname.replace(/^\//, '')),
      ...(url.searchParams.get('socket') ? { socketPath: url.searchParams.get('socket') as string } : {}),
      supportBigNumbers: true,
      bigNumberStrings: false,
      dateStrings: true,
      decimalNumbers: false,
      jsonStrings: false,
      timezone: 'Z',
      connectTimeout: 15_000,
      multipleStatements: false,
      rowsAsArray: true,
      typeCast: typeCast as mysql.TypeCast,
    }
    this.#pool = mysql.createPool({ ...this.#options, connectionLimit: 4, idleTimeout: 30_000, maxIdle: 2 })
    this.#pool.on('connection', (connection) => {
      connection.on('error', () => {})
      connection.query("SET time_zone = '+00:00'")
    })
  }

  #connect(): Promise<Connection> {
    return new Promise((resolve, reject) => {
      this.#pool.getConnection((error, connection) => {
        if (error) reject(connectionError(error, this.spec))
        else resolve(connection as Connection)
      })
    })
  }

  #query<T = unknown[]>(connection: mysql.PoolConnection, sql: string, values?: unknown): Promise<T[]> {
    return new Promise((resolve, reject) => {
      connection.query(
        { sql, values: values as mysql.QueryOptions['values'], rowsAsArray: false },
        (error, rows) => {
          if (error) reject(error)
          else resolve(rows as T[])
        },
      )
    })
  }

  async open(): Promise<void> {
    const connection = await this.#connect()
    try {
      const [row] = await this.#query<{ version: string }>(connection, 'SELECT VERSION() AS version')
      this.#mariadb = /mariadb/i.test(row?.version ?? '')
    } finally {
      connection.release()
    }
  }

  async #cancel(threadId: number): Promise<void> {
    const connection = mysql.createConnection({ ...this.#options, typeCast: undefined })
    connection.on('error', () => {})
    await new Promise<void>((resolve) => {
      connection.query(`KILL QUERY ${Number(threadId)}`, () => resolve())
    })
    await new Promise<void>((resolve) => connection.end(() => resolve()))
  }

  async run(
    query: string,
    params: unknown[] | Record<string, unknown> | undefined,
    { signal, timeoutMs, limits }: RunOptions,
  ): Promise<QueryStream> {
    const startedAt = Date.now()
    if (params !== undefined && !Array.isArray(params)) {
      throw new InvalidArgumentError('MySQL takes positional parameters', {
        hint: 'Write ? in the query for each value and pass params as a list.',
      })
    }
    if (this.#mariadb === undefined) await this.open()
    checkMysql(query, this.#mariadb ? 'MariaDB' : 'MySQL')
    if (signal.aborted) throw queryCancelled(signal.reason)
    const connection = await this.#connect()
    let stopped: AnalystError | undefined
    let cancelling: Promise<void> | undefined
    const stop = (error: AnalystError) => {
      if (stopped) return
      stopped = error
      cancelling = this.#cancel(connection.threadId)
    }
    const timer = setTimeout(() => stop(queryTimeout(timeoutMs)), timeoutMs)
    const onAbort = () => stop(queryCancelled(signal.reason))
    signal.addEventListener('abort', onAbort, { once: true })
    let released = false
    let onConnectionError = (_error: Error) => {}
    const finish = async (broken: boolean) => {
      if (released) return
      released = true
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
      connection.removeListener('error', onConnectionError)
      await cancelling
      if (!broken) await this.#query(connection, 'ROLLBACK').catch(() => (broken = true))
      if (broken) connection.destroy()
      else connection.release()
    }
    const failure = (error: unknown) => stopped ?? queryError(error, timeoutMs)
    try {
      await this.#query(connection, 'START TRANSACTION READ ONLY')
      await this.#query(connection, this.#timeLimit(timeoutMs))
    } catch (error) {
      await finish(true)
      throw failure(error)
    }

    let columns: QueryColumn[] | undefined
    let pending: unknown[][] = []
    let pendingRows = 0
    let paused = false
    const queue = new AsyncQueue<QueryBatch>({
      onRead: () => {
        if (paused && queue.length < 2) {
          paused = false
          connection.resume()
        }
      },
      onReturn: () => {
        // Stopped at a cap: end the query on the server; the rows read so far stand.
        cancelling ??= this.#cancel(connection.threadId)
        paused = false
        connection.resume()
      },
    })
    let ready: { resolve: () => void; reject: (error: unknown) => void } = { resolve() {}, reject() {} }
    const started = new Promise<void>((resolve, reject) => {
      ready = { resolve, reject }
    })
    const flush = () => {
      if (!columns || pendingRows === 0) return
      const batch = {
        rows: pendingRows,
        values: pending.map((values, c) => convertValues(columns?.[c]?.type ?? 'other', values)),
      }
      pending = columns.map(() => [])
      pendingRows = 0
      queue.push(batch)
      if (queue.length >= 2 && !paused) {
        paused = true
        connection.pause()
      }
    }
    let errored = false
    const onError = (error: Error) => {
      if (errored) return
      errored = true
      const failed = failure(error)
      ready.reject(failed)
      queue.fail(failed)
      void finish(true)
    }
    // A lost connection is told to the connection, not to a query without a callback.
    onConnectionError = onError
    connection.on('error', onError)
    const running = connection.query({
      sql: query,
      values: params as mysql.QueryOptions['values'],
      rowsAsArray: true,
    })
    running
      .on('fields', (fields: Field[]) => {
        columns = fields.map((field) => ({
          name: field.name,
          type: fieldType(field),
          sourceType: field.extendedTypeName ?? String(field.columnType),
        }))
        pending = columns.map(() => [])
      })
      .on('result', (row: unknown) => {
        if (!Array.isArray(row)) return // an OK packet: a statement without rows
        // The stream starts with the first row (or the end): an error before it rejects run().
        ready.resolve()
        for (let c = 0; c < row.length; c++) (pending[c] as unknown[]).push(row[c])
        if (++pendingRows >= BATCH_ROWS) flush()
      })
      .on('error', (error: Error) => {
        if (errored) return
        errored = true
        const failed = failure(error)
        ready.reject(failed)
        queue.fail(failed)
        void finish(isBroken(error))
      })
      .on('end', () => {
        if (errored) return
        // A killed SLEEP() ends without an error: the stop says what happened.
        if (stopped) {
          ready.reject(stopped)
          queue.fail(stopped)
        } else {
          flush()
          ready.resolve()
          queue.end()
        }
        void finish(false)
      })
    await started
    return cappedStream({ columns: columns ?? [], batches: queue, limits, startedAt, signal })
  }

  /** The server's limit on each statement of this connection (the session's: set before each use). */
  #timeLimit(timeoutMs: number): string {
    return this.#mariadb
      ? `SET SESSION max_statement_time = ${Math.max(0.001, timeoutMs / 1000)}`
      : `SET SESSION max_execution_time = ${Math.max(1, Math.ceil(timeoutMs))}`
  }

  /** A catalog read, read-only and bounded in time as the model's queries are. */
  async #read<T>(sql: string, values?: unknown[]): Promise<T[]> {
    const connection = await this.#connect()
    let broken = false
    try {
      await this.#query(connection, 'START TRANSACTION READ ONLY')
      await this.#query(connection, this.#timeLimit(CATALOG_TIMEOUT_MS))
      return await this.#query<T>(connection, sql, values)
    } catch (error) {
      broken = isBroken(error)
      throw queryError(error, 0)
    } finally {
      if (!broken) await this.#query(connection, 'ROLLBACK').catch(() => (broken = true))
      if (broken) connection.destroy()
      else connection.release()
    }
  }

  async catalog(): Promise<Catalog> {
    // Three catalog queries for the whole database, however many tables it has, at once.
    const [tables, columns, keys] = await Promise.all([
      this.#read<{ name: string; type: string; estimate: number | null; comment: string }>(
        `SELECT TABLE_NAME AS name, TABLE_TYPE AS type, TABLE_ROWS AS estimate, TABLE_COMMENT AS comment
         FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME`,
      ),
      this.#read<{
        tableName: string
        name: string
        type: string
        nullable: string
        comment: string
      }>(
        `SELECT TABLE_NAME AS tableName, COLUMN_NAME AS name, COLUMN_TYPE AS type, IS_NULLABLE AS nullable,
              COLUMN_COMMENT AS comment
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION`,
      ),
      this.#read<{
        tableName: string
        constraintName: string
        name: string
        referencedTable: string | null
        referencedColumn: string | null
      }>(
        `SELECT TABLE_NAME AS tableName, CONSTRAINT_NAME AS constraintName, COLUMN_NAME AS name,
              REFERENCED_TABLE_NAME AS referencedTable, REFERENCED_COLUMN_NAME AS referencedColumn
         FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE()
        ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION`,
      ),
    ])
    const byName = new Map<string, CatalogTable>()
    for (const table of tables) {
      byName.set(table.name, {
        name: table.name,
        kind: /VIEW/.test(table.type) ? 'view' : 'table',
        columns: [],
        ...(table.estimate !== null && !/VIEW/.test(table.type)
          ? { rowEstimate: Number(table.estimate) }
          : {}),
        ...(table.comment && table.comment !== 'VIEW' ? { comment: table.comment } : {}),
      })
    }
    for (const column of columns) {
      byName.get(column.tableName)?.columns.push({
        name: column.name,
        type: column.type,
        nullable: column.nullable === 'YES',
        ...(column.comment ? { comment: column.comment } : {}),
      })
    }
    const foreign = new Map<string, { columns: string[]; references: string; referencedColumns: string[] }>()
    for (const key of keys) {
      const table = byName.get(key.tableName)
      if (!table) continue
      if (key.constraintName === 'PRIMARY') {
        table.primaryKey ??= []
        table.primaryKey.push(key.name)
      } else if (key.referencedTable) {
        const id = `${key.tableName}.${key.constraintName}`
        let fk = foreign.get(id)
        if (!fk) {
          fk = { columns: [], references: key.referencedTable, referencedColumns: [] }
          foreign.set(id, fk)
          table.foreignKeys ??= []
          table.foreignKeys.push(fk)
        }
        fk.columns.push(key.name)
        fk.referencedColumns.push(key.referencedColumn ?? '')
      }
    }
    return { tables: [...byName.values()] }
  }

  quote(name: string): string {
    return `\`${name.replace(/`/g, '``')}\``
  }

  async canWrite(): Promise<WriteAccess> {
    const rows = await this.#read<Record<string, string>>('SHOW GRANTS')
    const grants = rows.map((row) => Object.values(row)[0] ?? '')
    const writes = /\b(ALL PRIVILEGES|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|FILE|SUPER|GRANT OPTION)\b/
    const found = grants.filter((grant) => writes.test(grant.replace(/\bREAD ONLY ADMIN\b/, '')))
    return found.length > 0
      ? {
          canWrite: true,
          reason: `the role's grants allow writes: ${found.map((grant) => grant.replace(/IDENTIFIED BY .*/, '')).join('; ')}`,
        }
      : { canWrite: false, reason: 'the role may only read' }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.#pool.end(() => resolve()))
  }
}

/** Converts a column; TIMESTAMP text (in the session's UTC) gets its offset. */
function convertValues(type: QueryColumnType, values: unknown[]): unknown[] {
  if (type === 'timestamptz') {
    return values.map((value) => (typeof value === 'string' ? `${isoTimestamp(value)}+00:00` : value))
  }
  return convertColumn(type, values)
}

type MysqlError = Error & { code?: string; errno?: number; fatal?: boolean }

function isBroken(error: unknown): boolean {
  const { code, fatal } = error as MysqlError
  return (
    Boolean(fatal) ||
    code === 'PROTOCOL_CONNECTION_LOST' ||
    code === 'ER_CONNECTION_KILLED' ||
    code === 'ECONNRESET' ||
    code === 'EPIPE'
  )
}

function connectionError(error: unknown, spec: SourceSpec): AnalystError {
  const { code, message } = error as MysqlError
  const where = redact(spec.location)
  if (code === 'ER_ACCESS_DENIED_ERROR' || code === 'ER_ACCESS_DENIED_NO_PASSWORD_ERROR') {
    return new UnauthorizedError(`The server refused the user or password for ${where}`, {
      hint: `Check the user and the password: in the URL, \${VAR} in it, or MYSQL_PWD.`,
    })
  }
  if (code === 'ER_BAD_DB_ERROR' || code === 'ER_DBACCESS_DENIED_ERROR') {
    return new NotFoundError(`The server has no such database, or the user may not use it: ${where}`, {
      hint: 'Check the database name at the end of the URL.',
    })
  }
  return new SandboxUnavailableError(`MySQL cannot be reached at ${where}: ${message}`, {
    hint: 'Check the host and port in the URL, and that the server runs and accepts connections.',
  })
}

function queryError(error: unknown, timeoutMs: number): AnalystError {
  if (AnalystError.isInstance(error)) return error
  const { code, errno, message } = error as MysqlError
  if (errno === 1969 || errno === 3024 || code === 'ER_STATEMENT_TIMEOUT' || code === 'ER_QUERY_TIMEOUT') {
    return queryTimeout(timeoutMs, error)
  }
  if (errno === 1317) return queryCancelled(error)
  if (errno === 1792) return refuse(`${message} (the transaction is read-only)`, ONLY_QUERIES)
  if (errno === 1142 || errno === 1143 || errno === 1227 || errno === 1045) {
    return new ForbiddenError(`MySQL: ${message}`, {
      hint: "Query only the tables the source's role may read.",
    })
  }
  if (isBroken(error)) {
    // mysql2's message ends with its own full stop; the hint follows after one.
    return new SandboxUnavailableError(
      `The MySQL server went away during the query: ${message.replace(/\.+$/, '')}`,
      {
        hint: 'Check that the server runs, then run the query again.',
      },
    )
  }
  return new InvalidArgumentError(`MySQL: ${message}`, {
    hint: 'Check the query against the schema (describe_table).',
  })
}
