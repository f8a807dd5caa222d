/**
 * DuckDB on the host: a `.duckdb` file opened with access_mode=READ_ONLY, or data files (CSV, TSV,
 * Parquet, NDJSON, gzipped too) queried in place through an in-memory database whose only tables
 * are views over them. Either way external access is then turned off, the only paths allowed are
 * the data files, extensions are neither installed nor loaded, and the configuration is locked, so
 * a query cannot ATTACH, COPY, INSTALL, LOAD or read other files whatever it says. DuckDB's own
 * parser checks the statement: one, of the kind SELECT or EXPLAIN. Queries spill to a folder of
 * their own under a memory limit; a timeout or an aborted cell interrupts the connection.
 * @module
 */
import { existsSync, mkdirSync } from 'node:fs'
import {
  type DuckDBConnection,
  type DuckDBDataChunk,
  DuckDBInstance,
  type DuckDBType,
  DuckDBTypeId,
  type DuckDBValue,
  JsonDuckDBValueConverter,
  StatementType,
} from '@duckdb/node-api'
import { InvalidArgumentError, NotFoundError } from '../errors.js'
import type { QueryBatch, QueryColumn, QueryColumnType, QueryStream } from '../sandbox/query.js'
import { convertColumn } from './columns.js'
import { estimateLineRows, isLineFile } from './file-rows.js'
import { notOneStatement, ONLY_QUERIES, refuse, unparsable } from './refuse.js'
import type { Catalog, CatalogTable, RunOptions, Source, WriteAccess } from './source.js'
import { cappedStream, queryCancelled, queryTimeout } from './stream.js'

const BATCH_ROWS = 10_000

export interface DuckDbFile {
  /** The view's name: the table queries use. */
  name: string
  path: string
}

export interface DuckDbOptions {
  /** A `.duckdb` file, opened read-only. */
  database?: string
  /** Data files, each a view of the in-memory database. */
  files?: DuckDbFile[]
  /** Where queries spill; the folder is made. */
  spillDirectory?: string
  /** DuckDB's memory_limit. @default '2GB' */
  memoryLimit?: string
  threads?: number
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`

/** The table function that reads a data file, from its extension. */
function reader(path: string): string {
  const lower = path.toLowerCase().replace(/\.gz$/, '')
  if (lower.endsWith('.parquet')) return `read_parquet(${literal(path)})`
  if (lower.endsWith('.ndjson') || lower.endsWith('.jsonl'))
    return `read_json(${literal(path)}, format = 'newline_delimited')`
  if (lower.endsWith('.json')) return `read_json(${literal(path)})`
  if (lower.endsWith('.tsv')) return `read_csv(${literal(path)}, delim = '\t')`
  return `read_csv(${literal(path)})`
}

function columnType(type: DuckDBType): QueryColumnType {
  if (type.alias === 'JSON') return 'json'
  switch (type.typeId) {
    case DuckDBTypeId.BOOLEAN:
      return 'bool'
    case DuckDBTypeId.TINYINT:
    case DuckDBTypeId.SMALLINT:
    case DuckDBTypeId.INTEGER:
    case DuckDBTypeId.BIGINT:
    case DuckDBTypeId.UTINYINT:
    case DuckDBTypeId.USMALLINT:
    case DuckDBTypeId.UINTEGER:
    case DuckDBTypeId.UBIGINT:
    case DuckDBTypeId.HUGEINT:
    case DuckDBTypeId.UHUGEINT:
      return 'int'
    case DuckDBTypeId.FLOAT:
    case DuckDBTypeId.DOUBLE:
      return 'float'
    case DuckDBTypeId.DECIMAL:
      return 'decimal'
    case DuckDBTypeId.DATE:
      return 'date'
    case DuckDBTypeId.TIMESTAMP:
    case DuckDBTypeId.TIMESTAMP_S:
    case DuckDBTypeId.TIMESTAMP_MS:
    case DuckDBTypeId.TIMESTAMP_NS:
      return 'timestamp'
    case DuckDBTypeId.TIMESTAMP_TZ:
      return 'timestamptz'
    case DuckDBTypeId.TIME:
      return 'time'
    case DuckDBTypeId.VARCHAR:
    case DuckDBTypeId.ENUM:
      return 'text'
    case DuckDBTypeId.UUID:
      return 'uuid'
    case DuckDBTypeId.BLOB:
      return 'bytes'
    case DuckDBTypeId.LIST:
    case DuckDBTypeId.STRUCT:
    case DuckDBTypeId.MAP:
    case DuckDBTypeId.ARRAY:
    case DuckDBTypeId.UNION:
      return 'json'
    default:
      return 'other'
  }
}

/** A chunk's column in the forms of its type. */
function columnValues(
  chunk: DuckDBDataChunk,
  index: number,
  type: DuckDBType,
  as: QueryColumnType,
): unknown[] {
  if (as === 'json' && type.alias !== 'JSON')
    return chunk.convertColumnValues(index, JsonDuckDBValueConverter)
  const values: unknown[] = chunk.getColumnValues(index)
  // DuckDB's value objects (dates, decimals, UUIDs, blobs) to the text or bytes they stand for.
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    if (value !== null && typeof value === 'object') {
      values[i] = as === 'bytes' ? ((value as { bytes?: Uint8Array }).bytes ?? value) : String(value)
    }
  }
  return convertColumn(as, values)
}

/** DuckDB's parameters: positional as a list, named as an object; numbers stay numbers. */
function duckParams(
  params: unknown[] | Record<string, unknown> | undefined,
): DuckDBValue[] | Record<string, DuckDBValue> | undefined {
  return params as DuckDBValue[] | Record<string, DuckDBValue> | undefined
}

export class DuckDbSource implements Source {
  readonly kind: 'duckdb' | 'file'
  #instance: DuckDBInstance | undefined
  #opening: Promise<DuckDBInstance> | undefined

  constructor(private readonly options: DuckDbOptions) {
    this.kind = options.database ? 'duckdb' : 'file'
  }

  /** The views' names, for file sources. */
  get tables(): string[] {
    return (this.options.files ?? []).map((file) => file.name)
  }

  async open(): Promise<void> {
    await this.#open()
  }

  #open(): Promise<DuckDBInstance> {
    if (this.#instance) return Promise.resolve(this.#instance)
    this.#opening ??= this.#create().then((instance) => {
      this.#instance = instance
      return instance
    })
    return this.#opening
  }

  async #create(): Promise<DuckDBInstance> {
    const { database, files = [], spillDirectory, memoryLimit = '2GB', threads } = this.options
    const settings: Record<string, string> = {
      memory_limit: memoryLimit,
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'false',
      ...(threads ? { threads: String(threads) } : {}),
    }
    if (spillDirectory) {
      mkdirSync(spillDirectory, { recursive: true })
      settings.temp_directory = spillDirectory
    }
    for (const path of [database, ...files.map((file) => file.path)]) {
      if (path && !existsSync(path)) {
        throw new NotFoundError(`${path} does not exist`, { hint: 'Check the path of the data source.' })
      }
    }
    let instance: DuckDBInstance
    try {
      instance = database
        ? await DuckDBInstance.create(database, { ...settings, access_mode: 'READ_ONLY' })
        : await DuckDBInstance.create(':memory:', settings)
    } catch (error) {
      throw new InvalidArgumentError(
        `${database} cannot be opened as a DuckDB database: ${(error as Error).message}`,
        {
          hint: 'Give a DuckDB database file (duckdb:PATH); for a CSV or Parquet file give its path alone.',
        },
      )
    }
    const connection = await instance.connect()
    try {
      for (const file of files) {
        try {
          await connection.run(`CREATE VIEW ${quote(file.name)} AS SELECT * FROM ${reader(file.path)}`)
        } catch (error) {
          throw new InvalidArgumentError(
            `${file.path} cannot be read as data: ${(error as Error).message.split('\n')[0]}`,
            {
              hint: 'Give a CSV, TSV, Parquet or NDJSON file (the extension says which).',
            },
          )
        }
      }
      const allowed = files.map((file) => literal(file.path)).join(', ')
      await connection.run(`SET allowed_paths = [${allowed}]`)
      if (spillDirectory) await connection.run(`SET allowed_directories = [${literal(spillDirectory)}]`)
      await connection.run('SET enable_external_access = false')
      await connection.run('SET lock_configuration = true')
    } catch (error) {
      connection.closeSync()
      instance.closeSync()
      throw error
    }
    connection.closeSync()
    return instance
  }

  async run(
    query: string,
    params: unknown[] | Record<string, unknown> | undefined,
    { signal, timeoutMs, limits }: RunOptions,
  ): Promise<QueryStream> {
    const startedAt = Date.now()
    if (signal.aborted) throw queryCancelled(signal.reason)
    const instance = await this.#open()
    const connection = await instance.connect()
    let stopped: Error | undefined
    const stop = (error: Error) => {
      stopped ??= error
      connection.interrupt()
    }
    const timer = setTimeout(() => stop(queryTimeout(timeoutMs)), timeoutMs)
    const onAbort = () => stop(queryCancelled(signal.reason))
    signal.addEventListener('abort', onAbort, { once: true })
    const finish = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
      connection.closeSync()
    }
    try {
      const result = await this.#start(connection, query, params)
      const types = result.columnTypes()
      const as = types.map(columnType)
      const columns: QueryColumn[] = result.columnNames().map((name, c) => ({
        name,
        type: as[c] ?? 'other',
        sourceType: types[c]?.toString(),
      }))
      async function* batches(): AsyncGenerator<QueryBatch> {
        try {
          let pending: unknown[][] = columns.map(() => [])
          let rows = 0
          for (;;) {
            const chunk = await result.fetchChunk()
            if (stopped) throw stopped
            if (!chunk || chunk.rowCount === 0) break
            for (let c = 0; c < columns.length; c++) {
              const values = columnValues(chunk, c, types[c] as DuckDBType, as[c] ?? 'other')
              const into = pending[c] as unknown[]
              for (const value of values) into.push(value)
            }
            rows += chunk.rowCount
            if (rows >= BATCH_ROWS) {
              yield { rows, values: pending }
              pending = columns.map(() => [])
              rows = 0
            }
          }
          if (rows > 0) yield { rows, values: pending }
        } catch (error) {
          throw stopped ?? duckdbError(error)
        } finally {
          finish()
        }
      }
      return cappedStream({ columns, batches: batches(), limits, startedAt, signal })
    } catch (error) {
      finish()
      throw stopped ?? error
    }
  }

  async #start(
    connection: DuckDBConnection,
    query: string,
    params: unknown[] | Record<string, unknown> | undefined,
  ) {
    let extracted: Awaited<ReturnType<DuckDBConnection['extractStatements']>>
    try {
      extracted = await connection.extractStatements(query)
    } catch (error) {
      throw unparsable(
        (error as Error).message.replace(/^Failed to extract statements: /, '').split('\n')[0] ?? '',
      )
    }
    if (extracted.count !== 1) throw notOneStatement(extracted.count)
    let prepared: Awaited<ReturnType<typeof extracted.prepare>>
    try {
      prepared = await extracted.prepare(0)
    } catch (error) {
      throw duckdbError(error)
    }
    const type = prepared.statementType
    if (type !== StatementType.SELECT && type !== StatementType.EXPLAIN) {
      const name = StatementType[type] ?? 'this statement'
      if (type === StatementType.ATTACH) throw refuse('ATTACH opens other databases', ONLY_QUERIES)
      if (type === StatementType.COPY || type === StatementType.EXPORT) {
        throw refuse(`${name} writes files`, 'Select the rows; the host streams them back.')
      }
      if (type === StatementType.LOAD || type === StatementType.EXTENSION) {
        throw refuse('INSTALL and LOAD bring in extensions', ONLY_QUERIES)
      }
      throw refuse(`${name.replace(/_/g, ' ')} is not a query`, ONLY_QUERIES)
    }
    try {
      const bound = duckParams(params)
      if (bound) prepared.bind(bound)
      return await prepared.stream()
    } catch (error) {
      throw duckdbError(error)
    }
  }

  async catalog(): Promise<Catalog> {
    const instance = await this.#open()
    const connection = await instance.connect()
    try {
      const read = async (sql: string) => (await connection.runAndReadAll(sql)).getRowObjectsJS()
      const tables = await read(`
        SELECT schema_name AS schema, table_name AS name, 'table' AS kind, estimated_size AS estimate, comment
          FROM duckdb_tables() WHERE NOT internal
        UNION ALL
        SELECT schema_name, view_name, 'view', NULL, comment FROM duckdb_views() WHERE NOT internal
        ORDER BY 1, 2`)
      const columns = await read(`
        SELECT schema_name AS schema, table_name AS name, column_name AS column, data_type AS type,
               is_nullable AS nullable, comment
          FROM duckdb_columns() WHERE NOT internal ORDER BY schema_name, table_name, column_index`)
      const constraints = await read(`
        SELECT schema_name AS schema, table_name AS name, constraint_type AS type, constraint_column_names AS columns,
               referenced_table AS referenced, referenced_column_names AS referenced_columns
          FROM duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')`)
      const key = (row: Record<string, unknown>) => `${row.schema}.${row.name}`
      const byTable = new Map<string, CatalogTable>()
      for (const row of tables) {
        const name = row.schema === 'main' ? String(row.name) : `${row.schema}.${row.name}`
        byTable.set(key(row), {
          name,
          kind: row.kind === 'view' ? 'view' : 'table',
          columns: [],
          ...(row.estimate !== null && row.estimate !== undefined
            ? { rowEstimate: Number(row.estimate) }
            : {}),
          ...(row.comment ? { comment: String(row.comment) } : {}),
        })
      }
      for (const row of columns) {
        byTable.get(key(row))?.columns.push({
          name: String(row.column),
          type: String(row.type),
          nullable: Boolean(row.nullable),
          ...(row.comment ? { comment: String(row.comment) } : {}),
        })
      }
      for (const row of constraints) {
        const table = byTable.get(key(row))
        if (!table) continue
        const names = (row.columns as string[]) ?? []
        if (row.type === 'PRIMARY KEY') table.primaryKey = names
        else {
          table.foreignKeys ??= []
          table.foreignKeys.push({
            columns: names,
            references: String(row.referenced),
            referencedColumns: (row.referenced_columns as string[]) ?? [],
          })
        }
      }
      await this.#estimateFiles(byTable, connection)
      return { tables: [...byTable.values()] }
    } finally {
      connection.closeSync()
    }
  }

  /** Data files are views, with no estimate of their own: one from the file (file-rows.ts). */
  async #estimateFiles(byTable: Map<string, CatalogTable>, connection: DuckDBConnection): Promise<void> {
    for (const file of this.options.files ?? []) {
      const table = byTable.get(`main.${file.name}`)
      if (!table || table.rowEstimate !== undefined) continue
      try {
        const rows = isLineFile(file.path)
          ? await estimateLineRows(file.path)
          : /\.parquet$/i.test(file.path)
            ? Number(
                (
                  await connection.runAndReadAll(`SELECT count(*) FROM ${quote(file.name)}`)
                ).getRows()[0]?.[0],
              )
            : undefined
        if (rows !== undefined && Number.isFinite(rows)) table.rowEstimate = rows
      } catch {
        // An estimate is a help: a file that cannot be measured is described without one.
      }
    }
  }

  async canWrite(): Promise<WriteAccess> {
    return this.kind === 'duckdb'
      ? { canWrite: false, reason: 'the DuckDB file is opened read-only (access_mode=READ_ONLY)' }
      : { canWrite: false, reason: 'data files are read through views of an in-memory database' }
  }

  async close(): Promise<void> {
    const instance = this.#instance ?? (await this.#opening?.catch(() => undefined))
    this.#instance = undefined
    this.#opening = undefined
    instance?.closeSync()
  }
}

function duckdbError(error: unknown): Error {
  const message = (error as Error)?.message ?? String(error)
  if (/^Parser Error/.test(message)) return unparsable(message)
  if (/Permission Error|disabled by configuration|configuration has been locked/.test(message)) {
    return refuse(
      `${message.split('\n')[0]}: only the data files can be read`,
      'Query the tables of this source; other files, extensions and databases are out of reach.',
    )
  }
  if (/read-only|read only/i.test(message)) return refuse('the database is read-only here', ONLY_QUERIES)
  return new InvalidArgumentError(`DuckDB: ${message.split('\n')[0]}`, {
    hint: 'Check the query against the schema (describe_table).',
  })
}
