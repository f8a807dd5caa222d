/**
 * What every engine does the same with one cell's output on the host: caps stdout/stderr and
 * results (the kernel is not trusted to), and words a timeout or a lost kernel the same way.
 * @module
 */
import { constants } from 'node:os'
import type { CommandEvent, ExecutionEvent, SandboxLimits } from './backend.js'
import type { MimeBundle } from './messaging.js'

export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${units[unit]}`
}

/** A process's end as a shell reports it (128 + the signal's number): `killed by SIGKILL`. */
export function signalExit(code: number): string {
  const number = code - 128
  const name = Object.entries(constants.signals).find(([, value]) => value === number)?.[0]
  return `killed by ${name ?? `signal ${number}`}`
}

export const STATE_LOST =
  'All variables and imports were lost (files in the workspace are kept); the next cell runs in a fresh kernel.'

/** The error of a cell stopped by its timeout, its state kept. */
export function timeoutError(seconds: number, traceback = ''): ExecutionEvent {
  return {
    type: 'error',
    name: 'TimeoutError',
    // Each door adds what raises the limit in its reader's words (fixes.ts).
    value: `The cell ran longer than its ${seconds} s timeout and was interrupted; variables and imports are kept.`,
    traceback,
  }
}

/** The error of a cell that would not stop when interrupted, so its kernel was killed or restarted. */
export function killedError(stopped: 'timeout' | 'abort' | undefined, seconds: number, lost = STATE_LOST) {
  if (stopped === 'timeout') {
    return {
      name: 'TimeoutError',
      value: `The cell ran longer than its ${seconds} s timeout and did not stop when interrupted, so its kernel was killed. ${lost}`,
      traceback: '',
    }
  }
  return {
    name: 'KernelRestarted',
    value: `The cell did not stop when interrupted, so its kernel was killed. ${lost}`,
    traceback: '',
  }
}

/** One cell's output and results on their way to the caller, within the sandbox's caps. */
export class CellOutput {
  private outputBytes = 0
  private resultBytes = 0
  private truncated = false
  private resultsDropped = false
  private engineDropped = false

  constructor(
    private readonly onEvent: (event: ExecutionEvent) => void,
    private readonly limits: Pick<SandboxLimits, 'outputBytes' | 'resultBytes'>,
  ) {}

  output(type: 'stdout' | 'stderr', text: string) {
    if (this.truncated) return
    const room = this.limits.outputBytes - this.outputBytes
    const kept = text.length > room ? text.slice(0, room) : text
    this.outputBytes += kept.length
    if (kept) this.onEvent({ type, text: kept })
    if (kept.length < text.length) this.truncate()
  }

  /** The cap was reached (here, or in a kernel that counts too): said once, the rest dropped. */
  truncate() {
    if (this.truncated) return
    this.truncated = true
    this.onEvent({
      type: 'stderr',
      text: `\n[output truncated: the cell printed more than ${formatBytes(this.limits.outputBytes)}; the rest was dropped (limits.outputBytes)]\n`,
    })
  }

  /** The engine dropped some of the output itself (said once per cell); what comes after is kept. */
  droppedByEngine(reason: string) {
    if (this.engineDropped || this.truncated) return
    this.engineDropped = true
    this.onEvent({ type: 'stderr', text: `\n[output truncated: ${reason}]\n` })
  }

  result(bundle: MimeBundle, isMainResult: boolean) {
    this.resultBytes += JSON.stringify(bundle).length
    if (this.resultBytes > this.limits.resultBytes) {
      if (!this.resultsDropped) {
        this.resultsDropped = true
        this.onEvent({
          type: 'stderr',
          text: `\n[results truncated: the cell displayed more than ${formatBytes(this.limits.resultBytes)}; the rest was dropped (limits.resultBytes)]\n`,
        })
      }
      return
    }
    this.onEvent({ type: 'result', bundle, isMainResult })
  }
}

/** One command's stdout and stderr on their way to the caller, within `outputBytes` (said once). */
export class CommandOutput {
  private outputBytes = 0
  private truncated = false

  constructor(
    private readonly onEvent: (event: CommandEvent) => void,
    private readonly cap: number,
  ) {}

  output(stream: 'stdout' | 'stderr', data: Uint8Array) {
    if (this.truncated) return
    const kept = data.subarray(0, Math.max(0, this.cap - this.outputBytes))
    this.outputBytes += kept.length
    if (kept.length > 0) this.onEvent({ type: stream, data: kept })
    if (kept.length < data.length) {
      this.truncated = true
      this.onEvent({
        type: 'stderr',
        data: new TextEncoder().encode(
          `\n[output truncated: the command printed more than ${formatBytes(this.cap)}; the rest was dropped (limits.outputBytes)]\n`,
        ),
      })
    }
  }
}
