/**
 * What the open session's kernel is doing, as the page knows it, for the parts that ask it for
 * something (a grid's page): whether a cell of this page runs in it now (a request waits behind
 * it; a question whose model is thinking holds no kernel), whether a question or cell of this page
 * goes on and how to stop it, a count that moves each time a cell ends (a cell may change any
 * frame it holds, so what was fetched before is stale), and how many times it learned that the
 * kernel's tables are gone (its restart, here or elsewhere: kernel-elsewhere.ts). A cell started
 * elsewhere (another tab, an MCP client) is told by the server, which knows its kernel
 * (grid-request.ts).
 * @module
 */
import { createContext } from 'preact'
import type { KernelGone } from './kernel-elsewhere.js'

export interface KernelState {
  /** A question or a person's cell of this page goes on (its model may be thinking). */
  busy: boolean
  /** A cell of this page runs in the kernel now: a person's, or a step of its question. */
  cellRunning: boolean
  /** Stops it (as Stop and Esc do). */
  stop: () => void
  /**
   * Told by a part whose request waited for a cell this page did not start, once it answered: the
   * cell has ended, so the session is read again and `cellsEnded` moves.
   */
  endedElsewhere: () => void
  /**
   * Told when this page restarted the session's kernel (the Restart button): the tables the old
   * one held are gone, and the grids that show them say so at once (`kernelStarts` moves), here
   * and in this browser's other tabs. (A question's stream that started a new kernel, a restart in
   * another tab or browser, move it too.)
   */
  restarted: () => void
  /** How many times the page learned that the kernel's tables are gone. */
  kernelStarts: number
  /** How, the last time: a restart it was told of, or no kernel found when it came back into view. */
  kernelGone: KernelGone
  /** Moves when a cell ends. */
  cellsEnded: string
}

export const KernelStateContext = createContext<KernelState>({
  busy: false,
  cellRunning: false,
  stop: () => {},
  endedElsewhere: () => {},
  restarted: () => {},
  kernelStarts: 0,
  kernelGone: 'restarted',
  cellsEnded: '',
})
