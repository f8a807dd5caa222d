/**
 * The tables a session's kernel keeps (each DataFrame result, by its id: analyst_data.py's
 * keep_frame): a page of rows, sorted, filtered and searched where the frame lives; column
 * statistics; the selection as a CSV or XLSX file. Each request runs in the session's sandbox as a
 * cell that is not recorded, so a filter (a pandas query expression, untrusted like any cell) runs
 * behind the sandbox's walls, after whatever cell is running.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { GoneError, InvalidArgumentError, SandboxError } from '../errors.js'
import type { Sandbox } from '../sandbox/index.js'

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

async function ask(sandbox: Sandbox, request: Record<string, unknown>): Promise<Record<string, unknown>> {
  // The request reaches Python as a JSON string literal (a JSON string is a Python string too).
  return answerOf(
    sandbox,
    `__import__('analyst_data').print_frame_request(${JSON.stringify(JSON.stringify(request))})`,
  )
}

/** Runs `code` (a call that prints one marked JSON line) in the kernel, unrecorded; its answer. */
async function answerOf(sandbox: Sandbox, code: string): Promise<Record<string, unknown>> {
  const execution = await sandbox.runCode(code, { timeoutMs: TIMEOUT_MS })
  if (execution.error)
    throw new SandboxError(
      `The kernel could not answer about the table: ${execution.error.name}: ${execution.error.value}`,
    )
  const line = execution.logs.stdout
    .join('')
    .split('\n')
    .find((text) => text.startsWith(MARK))
  if (!line) throw new SandboxError('The kernel did not answer about the table')
  const answer = JSON.parse(line.slice(MARK.length)) as Record<string, unknown>
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
  const answer = await answerOf(sandbox, "__import__('analyst_data').print_variables(globals())")
  return answer.variables as KernelVariable[]
}

/** The kernel's sandbox for a table, or why there is none (closed, restarted: the table is gone). */
function needSandbox(sandbox: Sandbox | undefined): Sandbox {
  if (!sandbox)
    throw new GoneError('This table is no longer in the kernel (the session was closed since)', {
      hint: RUN_AGAIN,
    })
  return sandbox
}

export async function framePage(
  sandbox: Sandbox | undefined,
  id: string,
  selection: FrameSelection & { offset: number; limit: number },
): Promise<FramePage> {
  return (await ask(needSandbox(sandbox), { kind: 'rows', id, ...selection })) as unknown as FramePage
}

export async function frameStats(
  sandbox: Sandbox | undefined,
  id: string,
  selection: FrameSelection,
): Promise<{ rows: number; columns: Record<string, ColumnStats> }> {
  return (await ask(needSandbox(sandbox), { kind: 'stats', id, ...selection })) as never
}

/**
 * The selected rows as a file, written in the sandbox's /tmp (outside the workspace, so no cell
 * sees it as an artifact), read, and removed.
 */
export async function frameFile(
  sandbox: Sandbox | undefined,
  id: string,
  selection: FrameSelection,
  format: 'csv' | 'xlsx',
): Promise<{ rows: number; content: Uint8Array }> {
  const box = needSandbox(sandbox)
  const path = `/tmp/analyst-table-${randomUUID()}.${format}`
  const answer = await ask(box, { kind: format, id, path, ...selection })
  try {
    return { rows: Number(answer.rows), content: await box.files.read(path, { format: 'bytes' }) }
  } finally {
    await box.files.remove(path).catch(() => undefined)
  }
}
