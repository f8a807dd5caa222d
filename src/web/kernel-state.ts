/**
 * What the open session's kernel is doing, as the page knows it, for the parts that ask it for
 * something (a grid's page): whether a cell or question runs (a request waits behind it), how to
 * stop it, and a count that moves each time a cell ends (a cell may change any frame it holds, so
 * what was fetched before is stale).
 * @module
 */
import { createContext } from 'preact'

export interface KernelState {
  /** A question or a person's cell runs in the kernel now. */
  busy: boolean
  /** Stops it (as Stop and Esc do). */
  stop: () => void
  /** Moves when a cell ends. */
  cellsEnded: string
}

export const KernelStateContext = createContext<KernelState>({ busy: false, stop: () => {}, cellsEnded: '' })
