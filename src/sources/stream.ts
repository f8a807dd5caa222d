/**
 * The row and byte caps, applied once for every kind: a source yields columnar batches as they
 * come, and the stream stops at a cap, closing the source's cursor, with a message that says so.
 * @module
 */
import { AnalystError } from '../errors.js'
import type { QueryBatch, QueryColumn, QueryStream, QuerySummary } from '../sandbox/query.js'
import type { Limits } from './source.js'

/** The size a value takes on its way to the sandbox, roughly: what the byte cap counts. */
function valueBytes(value: unknown): number {
  if (value === null || value === undefined) return 1
  switch (typeof value) {
    case 'string':
      return value.length + 2
    case 'number':
    case 'bigint':
      return 8
    case 'boolean':
      return 1
    default:
      return JSON.stringify(value)?.length ?? 8
  }
}

function truncation(by: 'rows' | 'bytes', limit: number): NonNullable<QuerySummary['truncated']> {
  const what =
    by === 'rows' ? `${limit.toLocaleString('en-US')} rows` : `${Math.round(limit / 1024 / 1024)} MiB`
  return {
    by,
    limit,
    message: `The result was cut at ${what}: only the first rows arrived. Aggregate in SQL (GROUP BY, COUNT, SUM, a WHERE, a LIMIT) to bring back less.`,
  }
}

/** The query ran past its time limit: it was cancelled on its server. */
export function queryTimeout(timeoutMs: number, cause?: unknown): AnalystError {
  return new AnalystError(
    `The query ran past its time limit (${Math.round(timeoutMs / 100) / 10} s) and was cancelled on its server`,
    { cause, fix: { setting: 'timeout' }, hint: 'Aggregate in SQL, filter with a WHERE, or add a LIMIT.' },
  )
}

/** The query was cancelled by the cell (interrupted or out of time). */
export function queryCancelled(cause?: unknown): AnalystError {
  return new AnalystError('The query was cancelled', { cause })
}

export interface CappedStreamOptions {
  columns: QueryColumn[]
  batches: AsyncIterable<QueryBatch>
  limits: Limits
  startedAt: number
  signal: AbortSignal
}

/** A batch's first `take` rows. */
function cut(batch: QueryBatch, take: number): QueryBatch {
  if ('columns' in batch) {
    const columns = batch.columns.map((column) => {
      const end = column.ends ? (column.ends[take - 1] ?? 0) : (column.data.length / batch.rows) * take
      return {
        layout: column.layout,
        data: column.data.subarray(0, end),
        ...(column.nulls ? { nulls: column.nulls.subarray(0, take) } : {}),
        ...(column.ends ? { ends: column.ends.subarray(0, take) } : {}),
      }
    })
    return { rows: take, rowEnds: batch.rowEnds.subarray(0, take), columns }
  }
  return { rows: take, values: batch.values.map((column) => column.slice(0, take)) }
}

/** A QueryStream over a source's batches, cut at the caps. */
export function cappedStream({
  columns,
  batches,
  limits,
  startedAt,
  signal,
}: CappedStreamOptions): QueryStream {
  let rows = 0
  let bytes = 0
  let truncated: QuerySummary['truncated']
  let finished: number | undefined
  async function* capped(): AsyncGenerator<QueryBatch> {
    try {
      for await (const batch of batches) {
        if (signal.aborted) throw queryCancelled(signal.reason)
        let take = batch.rows
        if (rows + take > limits.maxRows) {
          take = limits.maxRows - rows
          truncated = truncation('rows', limits.maxRows)
        }
        let size = 0
        if ('columns' in batch) {
          // The bytes as the server wrote them; a cut falls between rows.
          const ends = batch.rowEnds
          if (take > 0 && bytes + (ends[take - 1] as number) > limits.maxBytes) {
            take = ends.findIndex((end) => bytes + end > limits.maxBytes)
            truncated = truncation('bytes', limits.maxBytes)
          }
          size = take > 0 ? (ends[take - 1] as number) : 0
        } else {
          for (let r = 0; r < take; r++) {
            let row = 0
            for (const column of batch.values) row += valueBytes(column[r])
            if (bytes + size + row > limits.maxBytes) {
              take = r
              truncated = truncation('bytes', limits.maxBytes)
              break
            }
            size += row
          }
        }
        rows += take
        bytes += size
        if (take > 0) yield take === batch.rows ? batch : cut(batch, take)
        if (truncated) break // leaving the loop closes the source's cursor
      }
    } finally {
      finished = Date.now()
    }
  }
  return {
    columns,
    batches: capped(),
    summary: () => ({
      rows,
      durationMs: (finished ?? Date.now()) - startedAt,
      ...(truncated ? { truncated } : {}),
    }),
  }
}
