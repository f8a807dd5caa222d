/**
 * A few sample values per column, for tables whose catalog has none (PostgreSQL's pg_stats gives
 * them for analysed tables): the first rows of each table, read in one bulk statement for many
 * tables (UNION ALL, one row per table with its rows as JSON), through the source's own `run`, so
 * the sample is read-only, timed out and capped like any query. Each value is cut short on the
 * server, so a wide text column costs little.
 * @module
 */
import { batchValues, type QueryStream } from '../sandbox/query.js'
import type { CatalogTable, Source } from './source.js'
import type { SourceKind } from './spec.js'

/** Rows read per table; the distinct values among them are the samples. */
export const SAMPLE_ROWS = 20
/** Values kept per column. */
export const SAMPLES_PER_COLUMN = 3
/** A sample value is cut at this many characters. */
const VALUE_CHARS = 40
/** Columns sampled per table: SQLite's json_array takes at most 127 arguments by default. */
const MAX_COLUMNS = 100
/** Tables per bulk statement. */
const TABLES_PER_STATEMENT = 50
/** Bulk statements running at once (each source's pool has 4 connections). */
const STATEMENTS_AT_ONCE = 3

interface Dialect {
  quote(name: string): string
  /** A column's value as text of at most n characters (NULL for values without a text form). */
  text(column: string, n: number): string
  /** One table's row: its index and its rows as a JSON array of arrays. */
  row(index: number, values: string[], from: string): string
}

const double = (name: string) => `"${name.replace(/"/g, '""')}"`
const qualified = (quote: (part: string) => string) => (name: string) => name.split('.').map(quote).join('.')

const DIALECTS: Record<'postgres' | 'mysql' | 'sqlite' | 'duckdb', Dialect> = {
  postgres: {
    quote: qualified(double),
    text: (column, n) => `left(${column}::text, ${n})`,
    row: (index, values, from) =>
      `SELECT ${index} AS t, (SELECT json_agg(ARRAY[${values.join(', ')}]) FROM ${from})::text AS v`,
  },
  mysql: {
    quote: qualified((part) => `\`${part.replace(/`/g, '``')}\``),
    text: (column, n) => `LEFT(CAST(${column} AS CHAR), ${n})`,
    row: (index, values, from) =>
      `SELECT ${index} AS t, CAST(JSON_ARRAYAGG(JSON_ARRAY(${values.join(', ')})) AS CHAR) AS v FROM ${from}`,
  },
  sqlite: {
    quote: double,
    text: (column, n) =>
      `CASE WHEN typeof(${column}) = 'blob' THEN NULL ELSE substr(CAST(${column} AS TEXT), 1, ${n}) END`,
    row: (index, values, from) =>
      `SELECT ${index} AS t, json_group_array(json_array(${values.join(', ')})) AS v FROM ${from}`,
  },
  duckdb: {
    quote: qualified(double),
    text: (column, n) => `left(CAST(${column} AS VARCHAR), ${n})`,
    row: (index, values, from) =>
      `SELECT ${index} AS t, CAST(to_json(list([${values.join(', ')}])) AS VARCHAR) AS v FROM ${from}`,
  },
}

function dialectOf(kind: SourceKind): Dialect {
  return DIALECTS[kind === 'file' ? 'duckdb' : kind]
}

/** The bulk statement that reads the first rows of these tables (exported for its tests). */
export function sampleStatement(kind: SourceKind, tables: CatalogTable[], rows = SAMPLE_ROWS): string {
  const dialect = dialectOf(kind)
  return tables
    .map((table, index) => {
      const columns = table.columns.slice(0, MAX_COLUMNS)
      const values = columns.map((column) => dialect.text(`s.${dialect.quote(column.name)}`, VALUE_CHARS))
      const from = `(SELECT * FROM ${dialect.quote(table.name)} LIMIT ${rows}) s`
      return dialect.row(index, values, from)
    })
    .join('\nUNION ALL\n')
}

/** Up to `perColumn` distinct values of each column, from rows as arrays of text. */
export function distinctValues(rows: (string | null)[][], width: number, perColumn: number): string[][] {
  return Array.from({ length: width }, (_, c) => {
    const seen: string[] = []
    for (const row of rows) {
      const value = row[c]
      if (value === null || value === undefined || value === '' || seen.includes(value)) continue
      seen.push(value)
      if (seen.length >= perColumn) break
    }
    return seen
  })
}

async function readAll(stream: QueryStream): Promise<unknown[][]> {
  const rows: unknown[][] = []
  for await (const batch of stream.batches) {
    const values = batchValues(batch)
    for (let r = 0; r < batch.rows; r++) rows.push(values.map((column) => column[r]))
  }
  return rows
}

/**
 * Fills in the samples of the columns that have none, for these tables, in place. Views are
 * sampled only when asked (`views`: a view may be a costly query; data files are views too). A
 * table that cannot be sampled in time (a slow view, a table the role may not read) keeps its
 * columns bare: samples are a help, never a reason for the description to fail.
 */
/**
 * Tables whose first rows were read (a catalog's own objects, kept while its catalog is cached):
 * a table with no rows, or columns that are all NULL, is not read again for every question.
 */
const sampled = new WeakSet<CatalogTable>()

export async function addSamples(
  source: Source,
  tables: CatalogTable[],
  options: { timeoutMs: number; views?: boolean; perColumn?: number; signal?: AbortSignal },
): Promise<void> {
  const perColumn = options.perColumn ?? SAMPLES_PER_COLUMN
  const deadline = Date.now() + options.timeoutMs
  const wanted = tables.filter(
    (table) =>
      (table.kind === 'table' || options.views) &&
      table.columns.length > 0 &&
      !sampled.has(table) &&
      table.columns.some((column) => !column.samples?.length),
  )
  const run = async (group: CatalogTable[]) => {
    const timeoutMs = deadline - Date.now()
    if (timeoutMs <= 0) return
    const stream = await source.run(sampleStatement(source.kind, group), undefined, {
      signal: options.signal ?? new AbortController().signal,
      timeoutMs,
      limits: { maxRows: group.length, maxBytes: 64 * 1024 * 1024 },
    })
    for (const [index, json] of await readAll(stream)) {
      const table = group[Number(index)]
      if (!table) continue
      sampled.add(table)
      if (typeof json !== 'string') continue
      const rows = JSON.parse(json) as (string | null)[][] | null
      const values = distinctValues(rows ?? [], table.columns.length, perColumn)
      table.columns.forEach((column, c) => {
        if (!column.samples?.length && values[c]?.length) column.samples = values[c]
      })
    }
  }
  const groups: CatalogTable[][] = []
  for (let start = 0; start < wanted.length; start += TABLES_PER_STATEMENT)
    groups.push(wanted.slice(start, start + TABLES_PER_STATEMENT))
  // A few statements at once: a server answers them on connections of their own.
  const next = async (): Promise<void> => {
    const group = groups.shift()
    if (!group) return
    try {
      await run(group)
    } catch {
      // One table spoils its statement (one the role may not read): each alone, within the time left.
      if (group.length > 1) for (const table of group) await run([table]).catch(() => {})
    }
    return next()
  }
  await Promise.all(Array.from({ length: STATEMENTS_AT_ONCE }, next))
}
