/**
 * The seam between a sandbox and the data sources on the host (src/sources): code in a cell calls
 * `sql(query, source=None, params=None)`, the kernel asks the host over its protocol, and the host
 * runs the query against a source it holds, read-only and bounded, and streams the rows back in
 * columnar batches. Credentials and connections never enter the sandbox: only rows do.
 * @module
 */

/** A column's type as it reaches pandas: each maps to a dtype that keeps NULL apart from NaN. */
export type QueryColumnType =
  | 'int' // Int64 (nullable); values are numbers, or decimal strings beyond 2^53
  | 'float' // Float64 (nullable): NULL is pd.NA, NaN stays NaN (sent as the string 'NaN', 'Infinity', '-Infinity')
  | 'decimal' // decimal.Decimal objects; values are decimal strings
  | 'bool' // boolean (nullable)
  | 'text' // str objects
  | 'date' // datetime64[ns]; values are 'YYYY-MM-DD'
  | 'timestamp' // datetime64[ns], naive; ISO 8601 without an offset
  | 'timestamptz' // datetime64[ns, UTC]; ISO 8601 with an offset
  | 'time' // datetime.time; 'HH:MM:SS[.ffffff]'
  | 'interval' // timedelta64[ns]; ISO 8601 durations or seconds as numbers
  | 'json' // Python objects (dict, list, …); values are the parsed JSON
  | 'uuid' // uuid.UUID; values are canonical strings
  | 'bytes' // bytes; values are base64
  | 'other' // str; the source's text form

export interface QueryColumn {
  name: string
  type: QueryColumnType
  /** The source's own name for the type (`numeric(10,2)`, `VARCHAR`), for the record and the model. */
  sourceType?: string
}

/** One batch of rows, column by column: `values[c][r]` is column c of row r, null for NULL. */
export interface QueryValuesBatch {
  rows: number
  values: unknown[][]
}

/**
 * How a column's values travel in a QueryColumnsBatch: big-endian words (`i2` … `f8`, `bool` a
 * byte, `date` days and `usec` microseconds since 2000-01-01, `uuid` 16 bytes), `text` as UTF-8
 * with a NUL after each value, `bytes` as they are, cut at `ends`.
 */
export type ColumnLayout =
  | 'bool'
  | 'i2'
  | 'i4'
  | 'u4'
  | 'i8'
  | 'f4'
  | 'f8'
  | 'date'
  | 'usec'
  | 'uuid'
  | 'text'
  | 'bytes'

export interface QueryColumnData {
  layout: ColumnLayout
  data: Uint8Array
  /** 1 where the value is NULL; absent when none is. */
  nulls?: Uint8Array
  /** For text and bytes: the offset just past each row's value. */
  ends?: Uint32Array
}

/**
 * One batch of rows, column by column, in the form the source's server wrote them (PostgreSQL's
 * binary COPY): numpy reads the words whole, with no value parsed on the host. `rowEnds[r]` counts
 * the bytes up to the end of row r, for the byte cap.
 */
export interface QueryColumnsBatch {
  rows: number
  rowEnds: Uint32Array
  columns: QueryColumnData[]
}

export type QueryBatch = QueryValuesBatch | QueryColumnsBatch

/** A batch's values, column by column: only a caller that asked for columns gets QueryColumnsBatch. */
export function batchValues(batch: QueryBatch): unknown[][] {
  if ('columns' in batch) throw new Error('a batch of raw columns reached a reader that did not ask for them')
  return batch.values
}

/** How a query ended, once its rows have all been read. */
export interface QuerySummary {
  rows: number
  /** The query stopped at a cap: the rows so far are all there is, and the message says how to get less. */
  truncated?: { by: 'rows' | 'bytes'; limit: number; message: string }
  durationMs: number
}

/** A query running on the host: its columns at once, its rows as they come. */
export interface QueryStream {
  columns: QueryColumn[]
  batches: AsyncIterable<QueryBatch>
  /** After the batches are read. */
  summary(): QuerySummary
}

export interface QueryRequest {
  /** One SQL statement. */
  query: string
  /** The source's name; may be left out when there is one source. */
  source?: string
  /** Positional ($1, ?) or named parameters, bound by the driver, never spliced into the text. */
  params?: unknown[] | Record<string, unknown>
}

export interface QueryOptions {
  /** Aborted when the cell is interrupted or times out: the query is cancelled on its server. */
  signal: AbortSignal
  /** How long the statement may run on its server. */
  timeoutMs: number
  /** The caller takes QueryColumnsBatch where the source can send them (the kernels: numpy reads them whole). */
  rawColumns?: boolean
}

/** A source as the sandbox sees it: its name and kind, never its URL or password. */
export interface QuerySourceInfo {
  name: string
  kind: 'postgres' | 'mysql' | 'sqlite' | 'duckdb' | 'file'
}

/**
 * The host's sources for one sandbox. `run` rejects with an AnalystError that says what is wrong
 * (a refused statement, an unknown source, a wrong password, a server gone) and what to do;
 * the message reaches the cell as the exception `sql()` raises.
 */
export interface QueryHost {
  readonly sources: readonly QuerySourceInfo[]
  run(request: QueryRequest, options: QueryOptions): Promise<QueryStream>
  /** A table's description in full, as the prompt gives a source's tables (describe_table() in code). */
  describeTable?(table: string, source?: string): Promise<string>
  /**
   * The sources for the model's prompt, within a budget: tables, columns and types, keys, row
   * estimates, samples; those that best match the question in full and the rest by name.
   */
  describe?(options: { budgetChars: number; question?: string }): Promise<string>
}

/** The sources' description for the prompt: the host's own, else their names and kinds. */
export async function describeSources(host: QueryHost, question?: string): Promise<string> {
  if (host.describe) return host.describe({ budgetChars: 12_000, question })
  return host.sources.map((source) => `- ${source.name} (${source.kind})`).join('\n')
}

/** What a cell's step keeps of each query it ran (the history, exports, the views). */
export interface QueryRecord {
  source: string
  query: string
  rows: number
  durationMs: number
  truncated?: QuerySummary['truncated']
  /** Why it failed, if it did. */
  error?: string
}
