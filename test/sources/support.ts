/** Reading a QueryStream whole, for the sources' tests. */
import { batchValues, type QueryStream } from '../../src/sandbox/query.js'
import { Sources } from '../../src/sources/sources.js'
import { parseSource } from '../../src/sources/spec.js'

export async function drain(
  stream: QueryStream,
): Promise<{ columns: Record<string, unknown[]>; types: Record<string, string> }> {
  const columns: Record<string, unknown[]> = {}
  for (const column of stream.columns) columns[column.name] = []
  for await (const batch of stream.batches) {
    stream.columns.forEach((column, c) => {
      columns[column.name]?.push(...(batchValues(batch)[c] ?? []))
    })
  }
  return { columns, types: Object.fromEntries(stream.columns.map((column) => [column.name, column.type])) }
}

export function options(timeoutMs = 30_000, signal = new AbortController().signal) {
  return { signal, timeoutMs }
}

/** Sources opened from `--data` arguments. */
export function openSources(
  args: string[],
  limits?: { maxRows?: number; maxBytes?: number },
  env = process.env,
) {
  return Sources.open(
    args.map((arg) => parseSource(arg, env)),
    { limits },
  )
}

/** The queries of other sessions still running on a PostgreSQL server that hold `pattern` (not `admin`'s own). */
export async function runningQueries(
  admin: { query(text: string, values: unknown[]): Promise<{ rows: Record<string, unknown>[] }> },
  pattern: string,
): Promise<string[]> {
  const { rows } = await admin.query(
    "SELECT query FROM pg_stat_activity WHERE state = 'active' AND datname = current_database() AND pid <> pg_backend_pid() AND query LIKE $1",
    [`%${pattern}%`],
  )
  return rows.map((row) => row.query as string)
}
