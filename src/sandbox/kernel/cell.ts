/**
 * One cell on a kernel that speaks Analyst's protocol (protocol.ts), wherever the kernel runs (a
 * local jail, a Modal sandbox): its messages as execution events, a timeout or an abort that
 * interrupts it, and a kill when the interrupt is ignored for longer than a grace.
 * @module
 */
import { randomBytes } from 'node:crypto'
import type { DoExecuteOptions, ExecutionEvent, SandboxLimits } from '../backend.js'
import { CellOutput, timeoutError } from '../cell-output.js'
import type { HostRequest, KernelMessage } from './protocol.js'

/** What a cell needs of a kernel. */
export interface CellKernel {
  execute(
    request: Extract<HostRequest, { type: 'execute' }>,
    handler: (message: KernelMessage) => void,
  ): Promise<number | null>
  interrupt(id: string): void
  /** Ends the kernel now; the running `execute` then rejects with its exit. */
  kill(): unknown
}

export interface CellOutcome {
  /** The kernel's execution count, null when it did not finish the cell. */
  count: number | null
  /** Why the host stopped the cell, if it did. */
  stopped: 'timeout' | 'abort' | undefined
  /** The kernel ignored the interrupt and was killed. */
  killedByUs: boolean
  /** What `execute` rejected with (the kernel ended), if it did. */
  exit?: unknown
}

/**
 * Cell ids: a random start made once, then counted. Unique in this process, which is all a kernel
 * needs to tell its cells apart (an interrupt names the cell it is for), without a draw from the
 * system's random source at every cell.
 */
const CELL_IDS = randomBytes(4).toString('hex')
let cellsStarted = 0

/** Runs one cell: events go to `options.onEvent` (all but artifacts and `finish`, the caller's). */
export async function runKernelCell(
  kernel: CellKernel,
  options: DoExecuteOptions,
  settings: { limits: Pick<SandboxLimits, 'outputBytes' | 'resultBytes'>; interruptGraceMs: number },
): Promise<CellOutcome> {
  const { onEvent } = options
  const id = `${CELL_IDS}${(++cellsStarted).toString(16)}`
  const output = new CellOutput(onEvent, settings.limits)
  const outcome: CellOutcome = { count: null, stopped: undefined, killedByUs: false }
  let sawError = false
  let graceTimer: NodeJS.Timeout | undefined
  const seconds = options.timeoutMs / 1000
  const stop = (reason: 'timeout' | 'abort') => {
    if (outcome.stopped) return
    outcome.stopped = reason
    // Once: the kernel delivers it to the cell's code until its handler has run (analyst_kernel.py's
    // Interrupter), so a cell that still runs after the grace ignores interrupts and is killed.
    kernel.interrupt(id)
    graceTimer = setTimeout(() => {
      outcome.killedByUs = true
      kernel.kill()
    }, settings.interruptGraceMs)
  }
  const timer = setTimeout(() => stop('timeout'), options.timeoutMs)
  const onAbort = () => stop('abort')
  options.signal?.addEventListener('abort', onAbort, { once: true })
  const toEvent = (message: KernelMessage): ExecutionEvent | undefined => {
    switch (message.type) {
      case 'stdout':
      case 'stderr':
        output.output(message.type, message.text)
        return
      case 'truncated':
        output.truncate()
        return
      case 'result':
        output.result(message.bundle, message.main)
        return
      case 'error':
        sawError = true
        if (outcome.stopped === 'timeout' && message.name === 'KeyboardInterrupt') {
          return timeoutError(seconds, message.traceback)
        }
        // Another language's process ignored the interrupt: that context alone was restarted.
        if (outcome.stopped === 'timeout' && message.name === 'ContextRestarted') {
          return {
            type: 'error',
            name: 'TimeoutError',
            value: `The cell ran longer than its ${seconds} s timeout. ${message.value}`,
            traceback: message.traceback,
          }
        }
        return { type: 'error', name: message.name, value: message.value, traceback: message.traceback }
    }
  }
  try {
    outcome.count = await kernel.execute(
      { type: 'execute', id, code: options.code, context: options.contextId, envs: options.envs },
      (message) => {
        const event = toEvent(message)
        if (event) onEvent(event)
      },
    )
    if (outcome.stopped === 'timeout' && !sawError) onEvent(timeoutError(seconds))
  } catch (error) {
    outcome.exit = error
  } finally {
    clearTimeout(timer)
    clearTimeout(graceTimer)
    options.signal?.removeEventListener('abort', onAbort)
  }
  return outcome
}
