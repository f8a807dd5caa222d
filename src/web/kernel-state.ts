/**
 * What the open session's kernel is doing, as the page knows it, for the parts that ask it for
 * something (a grid's page): whether a cell or question of this page runs (a request waits behind
 * it), how to stop it, whether one started elsewhere (another tab, an MCP client) runs, and a count
 * that moves each time a cell ends (a cell may change any frame it holds, so what was fetched
 * before is stale).
 * @module
 */
import { createContext } from 'preact'

export interface KernelState {
  /** A question or a person's cell of this page runs in the kernel now. */
  busy: boolean
  /** Stops it (as Stop and Esc do). */
  stop: () => void
  /** A run started elsewhere (another tab, an MCP client) runs, as the session's record says. */
  elsewhere: boolean
  /**
   * Told by a part whose request waited for a cell this page did not start, once it answered: the
   * cell has ended, so the session is read again and `cellsEnded` moves.
   */
  endedElsewhere: () => void
  /** Moves when a cell ends. */
  cellsEnded: string
}

export const KernelStateContext = createContext<KernelState>({
  busy: false,
  stop: () => {},
  elsewhere: false,
  endedElsewhere: () => {},
  cellsEnded: '',
})
