/**
 * The host's answers to a cell's sql() and describe_table(), whatever carries them: the local and
 * Modal kernels' protocol (kernel/backend.ts) and the Jupyter prelude's marked input prompts
 * (jupyter/questions.ts). The queries go through the sources' own checks, timeouts and caps.
 * @module
 */
import { advice } from '../fixes.js'
import type { DoExecuteOptions } from './backend.js'
import { AnalystError } from './errors.js'
import type { HostQuestion } from './kernel/channel.js'
import type { HostRequest, WireColumn } from './kernel/protocol.js'
import type { QueryColumnData, QueryHost, QueryRecord } from './query.js'

/** The cell that runs now, as the host's answers to its sql() calls need it. */
export interface RunningCell {
  /** Aborted when the cell is stopped or ends: its queries are cancelled on their servers. */
  controller: AbortController
  /** When the cell must end: a query gets what is left of the cell's time. */
  deadline: number
  onEvent: DoExecuteOptions['onEvent']
  /** Each query still running, by the kernel's id for it. */
  queries: Map<string, AbortController>
  /** Each query's answer, until it has ended: the cell's end waits for their records. */
  answering: Set<Promise<void>>
}

/** Sends an answer; a promise when the transport wants the source to wait, a throw when it cannot carry the rows (the Jupyter engine's chunks). */
export type Answer = (request: HostRequest) => void | Promise<void>

/** Answers one question; a query's answer is tracked in the cell until it has ended. */
export function answerQuestion(
  sources: QueryHost | undefined,
  question: HostQuestion,
  cell: RunningCell | undefined,
  answer: Answer,
): Promise<void> {
  if (question.type === 'query-cancel') {
    cell?.queries.get(question.id)?.abort()
    return Promise.resolve()
  }
  if (question.type === 'describe-table') return describeTable(sources, question, cell, answer)
  const answering = runQuery(sources, question, cell, answer)
  cell?.answering.add(answering)
  void answering.finally(() => cell?.answering.delete(answering))
  return answering
}

/** Runs one sql() call on the host and streams its rows to the kernel; records it in the cell. */
async function runQuery(
  sources: QueryHost | undefined,
  question: Extract<HostQuestion, { type: 'query' }>,
  cell: RunningCell | undefined,
  answer: Answer,
) {
  const { id } = question
  const started = Date.now()
  const record: QueryRecord = { source: question.source ?? '', query: question.query, rows: 0, durationMs: 0 }
  const fail = (name: string, message: string) => {
    answer({ type: 'query-error', id, name, message })
    record.error = message
  }
  if (!cell) return fail('RuntimeError', 'sql() answers only while a cell runs')
  if (!sources || sources.sources.length === 0) {
    return fail(
      'RuntimeError',
      'This sandbox has no data sources: sql() has nothing to query. Give the session a database or a file.',
    )
  }
  const controller = new AbortController()
  const cancel = () => controller.abort(new Error('the cell was stopped'))
  // A query can reach the host after the cell's stop (they cross: the kernel asked before the
  // interrupt came, or its code went on after it): a stopped cell's query never starts.
  if (cell.controller.signal.aborted) cancel()
  else cell.controller.signal.addEventListener('abort', cancel, { once: true })
  cell.queries.set(id, controller)
  try {
    controller.signal.throwIfAborted()
    const stream = await sources.run(
      { query: question.query, source: question.source ?? undefined, params: question.params ?? undefined },
      {
        signal: controller.signal,
        timeoutMs: Math.max(1, cell.deadline - Date.now()),
        rawColumns: question.format !== 'values',
      },
    )
    const source = question.source ?? sources.sources[0]?.name ?? ''
    record.source = source
    answer({ type: 'query-columns', id, columns: stream.columns, source })
    for await (const batch of stream.batches) {
      await answer(
        'columns' in batch
          ? { type: 'query-rows', id, rows: batch.rows, columns: batch.columns.map(wireColumn) }
          : { type: 'query-rows', id, values: batch.values },
      )
    }
    const summary = stream.summary()
    record.rows = summary.rows
    if (summary.truncated) record.truncated = summary.truncated
    answer({ type: 'query-end', id, rows: summary.rows, truncated: summary.truncated?.message })
  } catch (error) {
    const name = controller.signal.aborted ? 'KeyboardInterrupt' : 'QueryError'
    fail(name, toldToCode(error))
  } finally {
    cell.queries.delete(id)
    cell.controller.signal.removeEventListener('abort', cancel)
    record.durationMs = Date.now() - started
    cell.onEvent({ type: 'query', record })
  }
}

const base64 = (bytes: ArrayBufferView) =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')

/** A column of raw values as the kernel reads it (analyst_sql.py): its bytes in base64. */
function wireColumn(column: QueryColumnData): WireColumn {
  return {
    layout: column.layout,
    data: base64(column.data),
    ...(column.nulls ? { nulls: base64(column.nulls) } : {}),
    // Text is cut at its NULs; bytes at their ends, little-endian.
    ...(column.layout === 'bytes' && column.ends ? { ends: base64(column.ends) } : {}),
  }
}

async function describeTable(
  sources: QueryHost | undefined,
  question: Extract<HostQuestion, { type: 'describe-table' }>,
  cell: RunningCell | undefined,
  answer: Answer,
) {
  try {
    if (!cell || !sources?.describeTable) throw new Error('This sandbox has no data sources to describe.')
    const text = await sources.describeTable(question.table, question.source ?? undefined)
    answer({ type: 'table-description', id: question.id, text })
  } catch (error) {
    answer({ type: 'table-description', id: question.id, error: toldToCode(error) })
  }
}

/** An error of the host's, as the exception code gets: what is wrong and what to do, for a model to act on. */
export function toldToCode(error: unknown): string {
  if (!AnalystError.isInstance(error)) return error instanceof Error ? error.message : String(error)
  const what = advice(error, 'model')
  return what ? `${error.message}. ${what}` : error.message
}
