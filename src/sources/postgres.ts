/**
 * PostgreSQL sources: each query in a `BEGIN READ ONLY` transaction with a `statement_timeout`,
 * after PostgreSQL's own parser has checked it (guard-postgres.ts). For a kernel, a SELECT without
 * parameters comes by binary COPY as raw columns (pg-copy.ts); otherwise it is read through a
 * cursor in batches (rows as arrays, never objects) with the driver's type parsers set to the
 * forms of QueryColumnType. A timeout or an aborted cell cancels the query on the server
 * (`pg_cancel_backend` from a second connection), not just abandons it.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { parse as parseConnectionString } from 'pg-connection-string'
import Cursor from 'pg-cursor'
import {
  AnalystError,
  ForbiddenError,
  InvalidArgumentError,
  NotFoundError,
  SandboxUnavailableError,
  UnauthorizedError,
} from '../errors.js'
import type { QueryBatch, QueryColumn, QueryColumnType, QueryStream } from '../sandbox/query.js'
import { checkPostgres } from './guard-postgres.js'
import { CopyOut, copyStatement, describeStatement, readsOf } from './pg-copy.js'
import { ONLY_QUERIES, refuse } from './refuse.js'
import { distinctValues, SAMPLES_PER_COLUMN } from './samples.js'
import type { Catalog, CatalogColumn, CatalogTable, RunOptions, Source, WriteAccess } from './source.js'
import type { SourceSpec } from './spec.js'
import { redact } from './spec.js'
import { cappedStream, queryCancelled, queryTimeout } from './stream.js'
import { bytesValue, floatFromText, intValue, isoTimestamp, isoTimestamptz } from './values.js'

const BATCH_ROWS = 10_000
/** How long a cancelled COPY may take to end before its connection is closed instead. */
const COPY_SETTLE_MS = 5_000
/** How long a catalog read may take on the server. */
const CATALOG_TIMEOUT_MS = 10_000

/** Type OIDs (pg_type) and what each becomes. */
const TYPES: Record<number, { type: QueryColumnType; parse?: (text: string) => unknown }> = {
  16: { type: 'bool', parse: (text) => text === 't' },
  17: { type: 'bytes', parse: (text) => bytesValue(Buffer.from(text.slice(2), 'hex')) },
  20: { type: 'int', parse: intValue },
  21: { type: 'int', parse: Number },
  23: { type: 'int', parse: Number },
  26: { type: 'int', parse: Number },
  700: { type: 'float', parse: floatFromText },
  701: { type: 'float', parse: floatFromText },
  1700: { type: 'decimal' },
  25: { type: 'text' },
  1043: { type: 'text' },
  1042: { type: 'text' },
  19: { type: 'text' },
  18: { type: 'text' },
  1082: { type: 'date' },
  1114: { type: 'timestamp', parse: isoTimestamp },
  1184: { type: 'timestamptz', parse: isoTimestamptz },
  1083: { type: 'time' },
  1186: { type: 'interval' },
  114: { type: 'json', parse: JSON.parse },
  3802: { type: 'json', parse: JSON.parse },
  2950: { type: 'uuid' },
}

const identity = (text: string) => text

/** The driver's parsers: each type's own, the text form for every other. */
const typeParsers = {
  getTypeParser: (oid: number) => TYPES[oid]?.parse ?? identity,
} as unknown as pg.CustomTypesConfig

/** The relations described: tables, views, materialized views, partitioned and foreign tables
 * outside the system schemas, that the role may read. */
const RELATIONS = `
  SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f')
     AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
     AND NOT c.relispartition
     AND has_table_privilege(c.oid, 'SELECT')`

interface TableRow {
  oid: number
  schema: string
  name: string
  kind: string
  estimate: number
  comment: string | null
}
const TABLES_SQL = `
  SELECT c.oid::int AS oid, n.nspname AS schema, c.relname AS name, c.relkind AS kind,
         c.reltuples::float8 AS estimate, d.description AS comment
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_description d ON d.objoid = c.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = 0
   WHERE c.oid IN (${RELATIONS})
   ORDER BY n.nspname, c.relname`

interface ColumnRow {
  oid: number
  num: number
  name: string
  type: string
  nullable: boolean
  comment: string | null
}
const COLUMNS_SQL = `
  SELECT a.attrelid::int AS oid, a.attnum::int AS num, a.attname AS name,
         format_type(a.atttypid, a.atttypmod) AS type, NOT a.attnotnull AS nullable, d.description AS comment
    FROM pg_attribute a
    LEFT JOIN pg_description d ON d.objoid = a.attrelid AND d.classoid = 'pg_class'::regclass AND d.objsubid = a.attnum
   WHERE a.attrelid IN (${RELATIONS}) AND a.attnum > 0 AND NOT a.attisdropped
   ORDER BY a.attrelid, a.attnum`

interface ConstraintRow {
  oid: number
  type: string
  keys: number[]
  foreign: number | null
  foreignKeys: number[] | null
}
const CONSTRAINTS_SQL = `
  SELECT conrelid::int AS oid, contype AS type, to_json(conkey::int[]) AS keys, confrelid::int AS foreign,
         to_json(confkey::int[]) AS "foreignKeys"
    FROM pg_constraint WHERE contype IN ('p', 'f') AND conrelid IN (${RELATIONS})
   ORDER BY conrelid, conname`

interface StatsRow {
  schema: string
  table: string
  name: string
  common: string[] | null
  bounds: string[] | null
}
/**
 * The planner's statistics of every analysed column the role may read (pg_stats shows no other):
 * the most common values, else the histogram's ends and middle. Reads no table; a table never
 * analysed has none, and the description reads its first rows instead.
 */
const STATS_SQL = `
  SELECT s.schemaname AS schema, s.tablename AS table, s.attname AS name,
         to_json((s.most_common_vals::text::text[])[1:3]) AS common,
         CASE WHEN s.most_common_vals IS NULL AND s.histogram_bounds IS NOT NULL THEN
           (SELECT to_json(ARRAY[h[1], h[(array_length(h, 1) + 1) / 2], h[array_length(h, 1)]])
              FROM (SELECT s.histogram_bounds::text::text[] AS h) b) END AS bounds
    FROM pg_stats s
   WHERE s.schemaname NOT IN ('pg_catalog', 'information_schema') AND NOT s.inherited`

export class PostgresSource implements Source {
  readonly kind = 'postgres' as const
  #pool: pg.Pool
  #config: pg.ClientConfig
  #prepared = new WeakSet<pg.PoolClient>()

  constructor(private readonly spec: SourceSpec) {
    const parsed = parseConnectionString(spec.location) as pg.ClientConfig & { options?: string }
    this.#config = {
      ...parsed,
      password: spec.password,
      application_name: 'analyst',
      connectionTimeoutMillis: 15_000,
      types: typeParsers,
    } as pg.ClientConfig
    this.#pool = new pg.Pool({ ...(this.#config as pg.PoolConfig), max: 4, idleTimeoutMillis: 30_000 })
    // An idle connection that the server closes (a restart) must not crash the host.
    this.#pool.on('error', () => {})
    this.#pool.on('connect', (client) => {
      client.on('error', () => {})
    })
  }

  async open(): Promise<void> {
    const client = await this.#connect()
    client.release()
  }

  async #connect(): Promise<pg.PoolClient> {
    let client: pg.PoolClient
    try {
      client = await this.#pool.connect()
    } catch (error) {
      throw connectionError(error, this.spec)
    }
    if (this.#prepared.has(client)) return client
    try {
      // Timestamps with time zones in UTC, intervals in ISO 8601, bytea in hex, whatever the role's
      // defaults: once a connection, which keeps them (a round trip saved on every query after).
      // Strings as the guard's parser reads them: with backslashes as escapes, a server would see
      // other statements than the ones checked.
      await client.query(
        "SET TIME ZONE 'UTC'; SET intervalstyle = 'iso_8601'; SET datestyle = 'ISO, YMD'; SET bytea_output = 'hex'; SET standard_conforming_strings = on",
      )
      this.#prepared.add(client)
    } catch (error) {
      client.release(true)
      throw connectionError(error, this.spec)
    }
    return client
  }

  /** Cancels the backend's running query from a second connection. */
  async #cancel(pid: number): Promise<void> {
    const client = new pg.Client(this.#config)
    client.on('error', () => {})
    try {
      await client.connect()
      await client.query('SELECT pg_cancel_backend($1)', [pid])
    } catch {
      // The server is gone, or the query already ended: nothing is left to cancel.
    } finally {
      await client.end().catch(() => {})
    }
  }

  async run(
    query: string,
    params: unknown[] | Record<string, unknown> | undefined,
    { signal, timeoutMs, limits, rawColumns }: RunOptions,
  ): Promise<QueryStream> {
    const startedAt = Date.now()
    if (params !== undefined && !Array.isArray(params)) {
      throw new InvalidArgumentError('PostgreSQL takes positional parameters', {
        hint: 'Write $1, $2 … in the query and pass params as a list.',
      })
    }
    const statement = await checkPostgres(query)
    if (signal.aborted) throw queryCancelled(signal.reason)
    const client = await this.#connect()
    const pid = (client as unknown as { processID: number }).processID
    let stopped: AnalystError | undefined
    let cancelling: Promise<void> | undefined
    let copy: CopyOut | undefined
    const stop = (error: AnalystError) => {
      if (stopped) return
      stopped = error
      cancelling = this.#cancel(pid)
      // A server blocked writing to a paused socket does not act on the cancel: read on, dropping.
      copy?.discard()
    }
    const timer = setTimeout(() => stop(queryTimeout(timeoutMs)), timeoutMs)
    const onAbort = () => stop(queryCancelled(signal.reason))
    signal.addEventListener('abort', onAbort, { once: true })
    let released = false
    const finish = async (broken: boolean) => {
      if (released) return
      released = true
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
      await cancelling
      if (!broken) await client.query('ROLLBACK').catch(() => (broken = true))
      client.release(broken)
    }
    const failure = (error: unknown) => stopped ?? queryError(error, timeoutMs)
    const columnsOf = (fields: pg.FieldDef[]): QueryColumn[] =>
      fields.map((field) => ({
        name: field.name,
        type: TYPES[field.dataTypeID]?.type ?? 'other',
        sourceType: String(field.dataTypeID),
      }))
    let fields: pg.FieldDef[] | undefined
    try {
      await client.query('BEGIN READ ONLY')
      await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.ceil(timeoutMs))}`)
      // Without parameters (COPY takes none), a SELECT can come as raw columns to a caller that takes them.
      if (rawColumns && !params?.length && statement.selects)
        fields = await describeStatement(client, statement.text)
    } catch (error) {
      await finish(isBroken(error))
      throw failure(error)
    }
    const reads = fields && readsOf(fields)
    if (fields && reads) {
      const running = new CopyOut(copyStatement(statement.text, reads), reads)
      copy = running
      client.query(running as unknown as pg.Submittable)
      async function* copied(): AsyncGenerator<QueryBatch> {
        let broken = false
        try {
          yield* running.batches()
        } catch (error) {
          broken = isBroken(error)
          throw failure(error)
        } finally {
          // Left before its end (a cap): the server goes on writing until it is cancelled. A cancel
          // that did not reach it (no connection to send it on) must not hold the connection: closed.
          running.discard()
          if (!running.ended) stop(queryCancelled())
          const ended = await Promise.race([
            running.settled.then(() => true),
            sleep(COPY_SETTLE_MS, false, { ref: false }),
          ])
          if (!ended) running.abandon()
          await finish(broken || !ended)
        }
      }
      return cappedStream({ columns: columnsOf(fields), batches: copied(), limits, startedAt, signal })
    }
    let cursor: Cursor
    let first: unknown[][]
    try {
      cursor = client.query(
        new Cursor(query, params as unknown[] | undefined, { rowMode: 'array', types: typeParsers }),
      )
      first = await cursor.read(BATCH_ROWS)
    } catch (error) {
      await finish(isBroken(error))
      throw failure(error)
    }
    const columns = columnsOf((cursor as unknown as { _result: { fields: pg.FieldDef[] } })._result.fields)
    const width = columns.length
    const toBatch = (rows: unknown[][]): QueryBatch => {
      const values: unknown[][] = Array.from({ length: width }, () => new Array(rows.length))
      for (let r = 0; r < rows.length; r++) {
        const row = rows[r] as unknown[]
        for (let c = 0; c < width; c++) (values[c] as unknown[])[r] = row[c] ?? null
      }
      return { rows: rows.length, values }
    }
    async function* batches(): AsyncGenerator<QueryBatch> {
      let broken = false
      try {
        let rows = first
        while (rows.length > 0) {
          yield toBatch(rows)
          if (rows.length < BATCH_ROWS) break
          rows = await cursor.read(BATCH_ROWS)
        }
        await cursor.close()
      } catch (error) {
        broken = isBroken(error)
        throw failure(error)
      } finally {
        await finish(broken)
      }
    }
    return cappedStream({ columns, batches: batches(), limits, startedAt, signal })
  }

  /**
   * Catalog statements in one read-only transaction, sent as one simple query: one round trip
   * however many there are. Their text must hold no value from outside (no parameters here).
   */
  async #read(statements: string[]): Promise<Record<string, unknown>[][]> {
    const client = await this.#connect()
    let broken = false
    try {
      const results = (await client.query(
        [
          'BEGIN READ ONLY',
          `SET LOCAL statement_timeout = ${CATALOG_TIMEOUT_MS}`,
          ...statements,
          'ROLLBACK',
        ].join(';\n'),
      )) as unknown as pg.QueryResult[]
      return results.slice(2, 2 + statements.length).map((result) => result.rows)
    } catch (error) {
      broken =
        isBroken(error) ||
        !(await client.query('ROLLBACK').then(
          () => true,
          () => false,
        ))
      throw queryError(error, 0)
    } finally {
      client.release(broken)
    }
  }

  async catalog(): Promise<Catalog> {
    // Four catalog statements for the whole database, however many tables it has, in one round
    // trip: the tables, their columns, their keys, the statistics (comments joined, not looked up
    // row by row). Statistics that cannot be read (another engine's catalog) are done without.
    const statements = [TABLES_SQL, COLUMNS_SQL, CONSTRAINTS_SQL]
    const results = await this.#read([...statements, STATS_SQL]).catch(() => this.#read(statements))
    const [tables, columns, constraints, stats = []] = results as unknown as [
      TableRow[],
      ColumnRow[],
      ConstraintRow[],
      StatsRow[] | undefined,
    ]
    const byOid = new Map<number, CatalogTable>()
    const namesByOid = new Map<number, Map<number, string>>()
    const nameOf = (schema: string, name: string) => (schema === 'public' ? name : `${schema}.${name}`)
    for (const table of tables) {
      byOid.set(table.oid, {
        name: nameOf(table.schema, table.name),
        kind: table.kind === 'v' || table.kind === 'm' ? 'view' : 'table',
        columns: [],
        ...(table.estimate >= 0 && table.kind !== 'v' ? { rowEstimate: Math.round(table.estimate) } : {}),
        ...(table.comment ? { comment: table.comment } : {}),
      })
    }
    for (const column of columns) {
      byOid.get(column.oid)?.columns.push({
        name: column.name,
        type: column.type,
        nullable: column.nullable,
        ...(column.comment ? { comment: column.comment } : {}),
      })
      const names = namesByOid.get(column.oid) ?? new Map<number, string>()
      namesByOid.set(column.oid, names.set(column.num, column.name))
    }
    const columnNames = (oid: number, nums: number[] | null) =>
      (nums ?? []).map((num) => namesByOid.get(oid)?.get(num) ?? String(num))
    for (const constraint of constraints) {
      const table = byOid.get(constraint.oid)
      if (!table) continue
      if (constraint.type === 'p') table.primaryKey = columnNames(constraint.oid, constraint.keys)
      else if (constraint.foreign !== null) {
        table.foreignKeys ??= []
        table.foreignKeys.push({
          columns: columnNames(constraint.oid, constraint.keys),
          references: byOid.get(constraint.foreign)?.name ?? String(constraint.foreign),
          referencedColumns: columnNames(constraint.foreign, constraint.foreignKeys),
        })
      }
    }
    const columnsByName = new Map<string, CatalogColumn>()
    for (const table of tables) {
      for (const column of byOid.get(table.oid)?.columns ?? [])
        columnsByName.set(`${table.schema}\0${table.name}\0${column.name}`, column)
    }
    for (const row of stats) {
      const column = columnsByName.get(`${row.schema}\0${row.table}\0${row.name}`)
      const values = [...(row.common ?? []), ...(row.bounds ?? [])].map((value) => [value])
      const samples = distinctValues(values, 1, SAMPLES_PER_COLUMN)[0]
      if (column && samples?.length) column.samples = samples.map((value) => value.slice(0, 40))
    }
    return { tables: [...byOid.values()] }
  }

  /** `schema.table` quoted for a query. */
  quote(name: string): string {
    return name
      .split('.')
      .map((part) => `"${part.replace(/"/g, '""')}"`)
      .join('.')
  }

  async canWrite(): Promise<WriteAccess> {
    const [rows] = await this.#read([
      `
      SELECT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser,
             (SELECT count(*)::int FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE c.relkind IN ('r', 'p', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
                 AND n.nspname NOT LIKE 'pg\\_%'
                 AND (has_table_privilege(c.oid, 'INSERT') OR has_table_privilege(c.oid, 'UPDATE')
                      OR has_table_privilege(c.oid, 'DELETE') OR has_table_privilege(c.oid, 'TRUNCATE'))) AS tables,
             (SELECT count(*)::int FROM pg_namespace n WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
                 AND n.nspname NOT LIKE 'pg\\_%' AND has_schema_privilege(n.oid, 'CREATE')) AS schemas,
             has_database_privilege(current_database(), 'CREATE') AS database`,
    ])
    const row = rows?.[0] as
      | { superuser: boolean; tables: number; schemas: number; database: boolean }
      | undefined
    if (!row) return { canWrite: false, reason: 'no privileges found' }
    const user = parseConnectionString(this.spec.location).user ?? 'the role'
    if (row.superuser) return { canWrite: true, reason: `${user} is a superuser` }
    const reasons = [
      row.tables > 0 ? `${user} may change ${row.tables} table${row.tables === 1 ? '' : 's'}` : '',
      row.schemas > 0 ? `may create tables in ${row.schemas} schema${row.schemas === 1 ? '' : 's'}` : '',
      row.database ? 'may create schemas in the database' : '',
    ].filter(Boolean)
    return reasons.length > 0
      ? { canWrite: true, reason: reasons.join(', ') }
      : { canWrite: false, reason: `${user} may only read` }
  }

  async close(): Promise<void> {
    await this.#pool.end().catch(() => {})
  }
}

type PgError = Error & { code?: string; severity?: string }

/** The connection is no longer usable: release it to be closed, not reused. */
function isBroken(error: unknown): boolean {
  const code = (error as PgError)?.code
  return (
    !code ||
    code.startsWith('08') ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    /Connection terminated|ECONNRESET|EPIPE/.test(String((error as Error)?.message))
  )
}

function connectionError(error: unknown, spec: SourceSpec): AnalystError {
  const { code, message } = error as PgError & { code?: string }
  const where = redact(spec.location)
  if (code === '28P01' || (code === '28000' && /password/i.test(message))) {
    return new UnauthorizedError(`PostgreSQL refused the password for ${where}`, {
      hint: `Check the password: in the URL, \${VAR} in it, or PGPASSWORD.`,
    })
  }
  if (code === '28000') {
    return new UnauthorizedError(`PostgreSQL refused the connection to ${where}: ${message}`, {
      hint: 'Check the user in the URL and that the server allows it from this host (pg_hba.conf).',
    })
  }
  if (code === '3D000') {
    return new NotFoundError(`PostgreSQL has no such database: ${where}`, {
      hint: 'Check the database name at the end of the URL.',
    })
  }
  if (
    code === 'ECONNREFUSED' ||
    code === 'ENOTFOUND' ||
    code === 'EAI_AGAIN' ||
    code === 'ETIMEDOUT' ||
    /timeout/i.test(message)
  ) {
    return new SandboxUnavailableError(`PostgreSQL cannot be reached at ${where}: ${message}`, {
      hint: 'Check the host and port in the URL, and that the server runs and accepts connections.',
    })
  }
  return new SandboxUnavailableError(`PostgreSQL: cannot connect to ${where}: ${message}`, {
    hint: 'Check the URL and that the server runs.',
  })
}

function queryError(error: unknown, timeoutMs: number): AnalystError {
  if (AnalystError.isInstance(error)) return error
  const { code, message } = error as PgError
  if (code === '57014')
    return /statement timeout/.test(message) ? queryTimeout(timeoutMs) : queryCancelled(error)
  if (code === '25006') return refuse(`${message} (the transaction is read-only)`, ONLY_QUERIES)
  if (code === '42501') {
    return new ForbiddenError(`PostgreSQL: ${message}`, {
      hint: "Query only the tables the source's role may read.",
    })
  }
  if (isBroken(error)) {
    return new SandboxUnavailableError(`The PostgreSQL server went away during the query: ${message}`, {
      hint: 'Check that the server runs, then run the query again.',
    })
  }
  return new InvalidArgumentError(`PostgreSQL: ${message}`, {
    hint: 'Check the query against the schema (describe_table).',
  })
}
