/**
 * The tables a session's kernel keeps (each DataFrame result, by its id: analyst_data.py's
 * keep_frame): a page of rows, sorted, filtered and searched where the frame lives; column
 * statistics; the selection as a CSV, XLSX or Parquet file, sent part by part as it is made. Each
 * request runs in the session's sandbox as a cell that is not recorded, so a filter (a pandas
 * query expression, untrusted like any cell) runs behind the sandbox's walls.
 *
 * Requests run in a context of their own, so they add nothing to the session's execution count
 * (the default context's). They still wait behind a running cell: the kernel runs one cell at a
 * time, whatever its context. Answering beside a running cell would need a protocol message that
 * the kernel's IO thread answers (as it answers commands), reading a frame another thread may be
 * changing (pandas is not thread-safe, and Stop cannot interrupt a side thread). Instead they
 * reach the kernel one at a time (inLane) and a page or statistics request takes a signal that
 * drops it while it waits, so the server keeps one waiting per grid (server/frames.ts).
 *
 * A kernel that replays the session's cells keeps new ids for the tables it makes again: they are
 * paired with the ids the steps were recorded with (tablesReplayed), so a grid asks by the one it has.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { ByteWriter, ParquetWriter, schemaFromColumnData } from 'hyparquet-writer'
import { GoneError, InvalidArgumentError, SandboxError } from '../errors.js'
import type { Execution, Sandbox } from '../sandbox/index.js'
import type { StoredResult } from '../store/index.js'
import { frameOf } from './recorder.js'

export interface FrameSelection {
  /** `col` ascending, `-col` descending. */
  sort?: string
  /** A pandas `DataFrame.query` expression. */
  filter?: string
  /** Rows with this text in any column (case-insensitive). */
  search?: string
}

export interface FramePage {
  /** Rows after the filter and the search. */
  rows: number
  offset: number
  data: Record<string, unknown[]>
}

export interface ColumnStats {
  type: string
  nulls: number
  min?: number
  max?: number
  mean?: number
  histogram?: { counts: number[]; edges: number[] }
  unique?: number
  top?: [string, number][]
}

const MARK = '\u001eanalyst-frame '
const TIMEOUT_MS = 120_000

/** What to do once the table is gone from the kernel. */
const RUN_AGAIN = 'Run its step again to get the table back.'

type Context = Awaited<ReturnType<Sandbox['createContext']>>

/** Each sandbox's context for the host's questions (made at the first; the default where none can be). */
const contexts = new WeakMap<Sandbox, Promise<Context | undefined>>()
/** Questions asked in each sandbox since its context was last cleared. */
const asked = new WeakMap<Sandbox, number>()
/**
 * The kernel keeps each cell that worked, to run again if it dies (src/sandbox/kernel/kept-cells.ts),
 * up to a bound past which it keeps none: the questions' context is cleared now and then (its
 * namespace holds nothing; the frames live in analyst_data), so paging never crowds out the cells.
 */
const CLEAR_EVERY = 50

function contextOf(sandbox: Sandbox): Promise<Context | undefined> {
  let context = contexts.get(sandbox)
  if (!context) {
    context = sandbox.createContext().catch(() => undefined)
    contexts.set(sandbox, context)
  }
  return context
}

/** Request kinds that make a download's parts. */
const DOWNLOADS = new Set(['csv-part', 'columns-part', 'xlsx'])

async function ask(
  sandbox: Sandbox,
  request: { kind: string; id: string } & Record<string, unknown>,
  signal?: AbortSignal,
): Promise<Record<string, unknown>> {
  const id = keptId(sandbox, request.id)
  // The request reaches Python as a JSON string literal (a JSON string is a Python string too).
  return answerOf(
    sandbox,
    `__import__('analyst_data').print_frame_request(${JSON.stringify(JSON.stringify({ ...request, id }))})`,
    signal,
    DOWNLOADS.has(request.kind) ? request.id : undefined,
  )
}

/** Each sandbox's last request in its lane (inLane). */
const lanes = new WeakMap<Sandbox, Promise<unknown>>()

/**
 * `work` in its sandbox's lane: the host's questions reach the kernel one at a time, so all but
 * one wait here, not in the kernel's queue, where a request can only be stopped by interrupting
 * it (and a stop that comes late kills the kernel, frames and all). An aborted `signal` drops a
 * request still waiting here at once, with the signal's reason; one in the kernel runs on.
 */
function inLane<T>(sandbox: Sandbox, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  const turn = (lanes.get(sandbox) ?? Promise.resolve()).then(() => {
    signal?.throwIfAborted()
    return work()
  })
  lanes.set(
    sandbox,
    turn.catch(() => undefined),
  )
  if (!signal) return turn
  return new Promise<T>((resolve, reject) => {
    const dropped = () => reject(signal.reason)
    if (signal.aborted) dropped()
    signal.addEventListener('abort', dropped, { once: true })
    turn.then(resolve, reject).finally(() => signal.removeEventListener('abort', dropped))
  })
}

/**
 * Runs `code` (a call that prints one marked JSON line) in the kernel, unrecorded, in the
 * sandbox's lane; its answer. An aborted `signal` drops the request while it waits (the kernel
 * never sees it) and rejects with the signal's reason.
 */
function answerOf(
  sandbox: Sandbox,
  code: string,
  signal?: AbortSignal,
  download?: string,
): Promise<Record<string, unknown>> {
  return inLane(
    sandbox,
    async () => {
      if (download !== undefined) downloading.set(sandbox, download)
      try {
        return await answerNow(sandbox, code)
      } finally {
        if (download !== undefined) downloading.delete(sandbox)
      }
    },
    signal,
  )
}

/** The host's questions in each sandbox's kernel now (at most one: they go in its lane). */
const inKernel = new WeakMap<Sandbox, number>()
/** The table whose download holds each sandbox's kernel now (a part of it being made). */
const downloading = new WeakMap<Sandbox, string>()

/**
 * What a request for a table would wait for now: a cell that holds the kernel, or a part of a
 * table's download being made (its id: an XLSX file is made whole, which takes a while).
 */
export function kernelHeldBy(sandbox: Sandbox): { cell: true } | { download: string } | undefined {
  if (cellRunning(sandbox)) return { cell: true }
  const table = downloading.get(sandbox)
  return table === undefined ? undefined : { download: table }
}

/**
 * Each sandbox's tables as a replay rebuilt them: the id a step's result was recorded with → the
 * id the kernel keeps it by now, or why the replay did not make it again (its step's failure).
 */
const rebuilt = new WeakMap<Sandbox, Map<string, string | { failed: string }>>()

/**
 * Pairs the tables a step made when it was recorded with those its replay made (in order): a
 * kernel that replays keeps new ids (analyst_data.keep_frame), and a grid asks by the old one.
 * A step that failed when it ran is not replayed (`replay` undefined): its tables are not made
 * again either, which is said as such, not as the kernel's "restarted since".
 */
export function tablesReplayed(
  sandbox: Sandbox,
  recorded: StoredResult[],
  replay: Execution | undefined,
): void {
  const before = recorded.flatMap((result) => (result.frame ? [result.frame.id] : []))
  if (before.length === 0) return
  const after =
    !replay || replay.error
      ? []
      : replay.results.flatMap((result) => {
          const frame = frameOf(result.extra)
          return frame ? [frame.id] : []
        })
  const ids = rebuilt.get(sandbox) ?? new Map<string, string | { failed: string }>()
  rebuilt.set(sandbox, ids)
  const failed = replay ? 'when replayed' : 'when it ran, so it is not replayed'
  for (const [at, id] of before.entries()) ids.set(id, after[at] ?? { failed })
}

/** The id the kernel keeps a table by now (see tablesReplayed). */
function keptId(sandbox: Sandbox, id: string): string {
  const now = rebuilt.get(sandbox)?.get(id)
  if (typeof now === 'object')
    throw new GoneError(
      `This table was not made again when the session's state was rebuilt (its step failed ${now.failed})`,
      { hint: RUN_AGAIN },
    )
  return now ?? id
}

/**
 * Whether a cell holds the sandbox's kernel now (a question's, a person's, an MCP client's, one
 * replayed), so that a request for a table waits for it. The host's own questions are not cells,
 * and a question whose model is still thinking holds nothing.
 */
export function cellRunning(sandbox: Sandbox): boolean {
  return sandbox.runningCells > (inKernel.get(sandbox) ?? 0)
}

async function answerNow(sandbox: Sandbox, code: string): Promise<Record<string, unknown>> {
  const context = await contextOf(sandbox)
  inKernel.set(sandbox, (inKernel.get(sandbox) ?? 0) + 1)
  let execution: Awaited<ReturnType<Sandbox['runCode']>>
  try {
    execution = await sandbox.runCode(code, { timeoutMs: TIMEOUT_MS, ...(context ? { context } : {}) })
  } finally {
    inKernel.set(sandbox, (inKernel.get(sandbox) ?? 1) - 1)
  }
  const count = (asked.get(sandbox) ?? 0) + 1
  asked.set(sandbox, count % CLEAR_EVERY)
  if (context && count === CLEAR_EVERY) await sandbox.restartCodeContext(context).catch(() => undefined)
  if (execution.error)
    throw new SandboxError(
      `The kernel could not answer about the table: ${execution.error.name}: ${execution.error.value}`,
    )
  const text = execution.logs.stdout.join('')
  const start = text.indexOf(MARK)
  if (start < 0) throw new SandboxError('The kernel did not answer about the table')
  const end = text.indexOf('\n', start)
  const answer = JSON.parse(text.slice(start + MARK.length, end < 0 ? undefined : end)) as Record<
    string,
    unknown
  >
  if (answer.error === 'gone') throw new GoneError(String(answer.message), { hint: RUN_AGAIN })
  if (answer.error) throw new InvalidArgumentError(String(answer.message))
  return answer
}

export interface KernelVariable {
  name: string
  type: string
  shape?: number[]
  bytes?: number
  length?: number
}

/** The kernel's variables (name, type, shape and memory for frames and arrays); none when it is closed. */
export async function kernelVariables(sandbox: Sandbox | undefined): Promise<KernelVariable[]> {
  if (!sandbox) return []
  const answer = await answerOf(sandbox, "__import__('analyst_data').print_variables()")
  return answer.variables as KernelVariable[]
}

/** The kernel's sandbox for a table, or why there is none (closed, restarted: the table is gone). */
function needSandbox(sandbox: Sandbox | undefined): Sandbox {
  if (!sandbox)
    throw new GoneError(
      "This table is not in the kernel now (it was restarted, paused or closed since): the session's next cell or question rebuilds its state",
      {
        hint: RUN_AGAIN,
      },
    )
  return sandbox
}

export async function framePage(
  sandbox: Sandbox | undefined,
  id: string,
  selection: FrameSelection & { offset: number; limit: number },
  signal?: AbortSignal,
): Promise<FramePage> {
  return (await ask(needSandbox(sandbox), { kind: 'rows', id, ...selection }, signal)) as unknown as FramePage
}

export async function frameStats(
  sandbox: Sandbox | undefined,
  id: string,
  selection: FrameSelection,
  signal?: AbortSignal,
): Promise<{ rows: number; columns: Record<string, ColumnStats> }> {
  return (await ask(needSandbox(sandbox), { kind: 'stats', id, ...selection }, signal)) as never
}

export type FrameFormat = 'csv' | 'xlsx' | 'parquet'

/** Rows per part of a download: a few MB of text at most, well under a cell's output cap. */
const PART_ROWS = 50_000
/** Bytes per part of a file the kernel wrote (base64 on stdout: a third more). */
const FILE_PART_BYTES = 4 * 1024 * 1024

/**
 * The selected rows as a file, part by part as it is made, so a big table never sits whole in
 * the server's memory: CSV text from pandas; Parquet written here (the sandbox has no pyarrow)
 * from typed columns, a row group per part; XLSX written by pandas in the sandbox's /tmp (outside
 * the workspace, so no cell sees it as an artifact), then read in parts and removed. The first
 * part is asked for before the generator is returned, so a bad request throws before any byte.
 */
export async function frameFile(
  sandbox: Sandbox | undefined,
  id: string,
  selection: FrameSelection,
  format: FrameFormat,
): Promise<AsyncGenerator<Uint8Array>> {
  const box = needSandbox(sandbox)
  if (format === 'xlsx') {
    const path = `/tmp/analyst-table-${randomUUID()}.xlsx`
    try {
      await ask(box, { kind: 'xlsx', id, path, ...selection })
    } catch (error) {
      await removeFile(box, path)
      throw error
    }
    return filePartsOf(box, path, id)
  }
  const kind = format === 'csv' ? 'csv-part' : 'columns-part'
  const first = await ask(box, { kind, id, ...selection, offset: 0, limit: PART_ROWS })
  const parts = partsOf(box, { kind, id, ...selection }, first)
  return format === 'csv' ? csvOf(parts) : parquetOf(parts)
}

interface Part {
  rows: number
  offset: number
  count: number
  text?: string
  kinds?: Record<string, ColumnKind>
  data?: Record<string, unknown[]>
}

type ColumnKind = 'int' | 'float' | 'bool' | 'datetime' | 'string'

async function* partsOf(
  sandbox: Sandbox,
  request: { kind: string; id: string } & Record<string, unknown>,
  first: Record<string, unknown>,
): AsyncGenerator<Part> {
  let part = first as unknown as Part
  for (;;) {
    yield part
    const next = part.offset + part.count
    if (part.count === 0 || next >= part.rows) return
    part = (await ask(sandbox, { ...request, offset: next, limit: PART_ROWS })) as unknown as Part
  }
}

async function* csvOf(parts: AsyncGenerator<Part>): AsyncGenerator<Uint8Array> {
  const encoder = new TextEncoder()
  for await (const part of parts) yield encoder.encode(part.text ?? '')
}

/** How each kind of column is written: its Parquet type, and its values as the writer takes them. */
const PARQUET: Record<ColumnKind, { type: 'INT64' | 'DOUBLE' | 'BOOLEAN' | 'STRING' | 'TIMESTAMP' }> = {
  int: { type: 'INT64' },
  float: { type: 'DOUBLE' },
  bool: { type: 'BOOLEAN' },
  datetime: { type: 'TIMESTAMP' },
  string: { type: 'STRING' },
}

function parquetValues(kind: ColumnKind, values: unknown[]): unknown[] {
  if (kind === 'int') return values.map((v) => (v === null ? null : BigInt(v as number)))
  if (kind === 'datetime') return values.map((v) => (v === null ? null : new Date(v as number)))
  return values
}

async function* parquetOf(parts: AsyncGenerator<Part>): AsyncGenerator<Uint8Array> {
  const out: Uint8Array[] = []
  // Each row group is handed on as soon as it is written (ParquetWriter flushes after each).
  const writer: ByteWriter & { flush?: () => void } = new ByteWriter()
  const flushed = () => {
    out.push(writer.getBytes().slice())
    writer.index = 0
  }
  writer.flush = flushed
  let parquet: ParquetWriter | undefined
  for await (const part of parts) {
    const kinds = part.kinds ?? {}
    const columnData = Object.entries(kinds).map(([name, kind]) => ({
      name,
      data: parquetValues(kind, part.data?.[name] ?? []),
      type: PARQUET[kind].type,
      nullable: true,
    }))
    if (!parquet) {
      parquet = new ParquetWriter({ writer, schema: schemaFromColumnData({ columnData }) })
    }
    if (part.count > 0) await parquet.write({ columnData, rowGroupSize: part.count })
    yield* out.splice(0)
  }
  await parquet?.finish()
  flushed()
  yield* out.splice(0)
}

async function* filePartsOf(sandbox: Sandbox, path: string, table: string): AsyncGenerator<Uint8Array> {
  try {
    for (let offset = 0; ; offset += FILE_PART_BYTES) {
      const answer = await answerOf(
        sandbox,
        `__import__('analyst_data').print_file_part(${JSON.stringify(path)}, ${offset}, ${FILE_PART_BYTES})`,
        undefined,
        table,
      )
      yield Buffer.from(String(answer.data), 'base64')
      if (answer.end) return
    }
  } finally {
    await removeFile(sandbox, path)
  }
}

function removeFile(sandbox: Sandbox, path: string): Promise<void> {
  return sandbox.files.remove(path).catch(() => undefined)
}
