/**
 * The cells of a sandbox that ran without error, in order and by context: what is run again in a
 * new kernel when the last one died (the OOM killer, a SIGKILL), so that its variables and imports
 * come back, as a session is rebuilt from its stored steps. Bounded: past the bounds nothing is
 * kept, and a death loses the state as it would without them.
 * @module
 */
import { STATE_LOST } from '../cell-output.js'

const MAX_CELLS = 1000
const MAX_BYTES = 8 * 1024 * 1024

export interface KeptCell {
  contextId: string | undefined
  code: string
  envs?: Record<string, string>
}

export class KeptCells {
  private cells: KeptCell[] = []
  private bytes = 0
  private tooMany = false

  add(cell: KeptCell) {
    if (this.tooMany) return
    this.cells.push(cell)
    this.bytes += cell.code.length
    if (this.cells.length > MAX_CELLS || this.bytes > MAX_BYTES) this.forget()
  }

  /** A context's namespace was cleared or removed: its cells no longer make anything. */
  dropContext(contextId: string) {
    const matches = (cell: KeptCell) => (cell.contextId ?? 'default') === contextId
    this.bytes -= this.cells.filter(matches).reduce((sum, cell) => sum + cell.code.length, 0)
    this.cells = this.cells.filter((cell) => !matches(cell))
  }

  /** Nothing can be rebuilt from now on (too many cells, or a rerun that failed). */
  forget() {
    this.tooMany = true
    this.cells = []
    this.bytes = 0
  }

  list(): readonly KeptCell[] {
    return this.cells
  }

  /** What a kernel's death costs, said with the death. */
  get lost(): string {
    if (this.tooMany) return STATE_LOST
    const count = this.cells.length
    if (count === 0) return 'The next cell runs in a new kernel (files in the workspace are kept).'
    return `The ${count === 1 ? 'cell' : `${count} cells`} that ran without error before ${count === 1 ? 'runs' : 'run'} again in a new kernel, so their variables and imports come back (the cell that was running does not); files in the workspace are kept.`
  }
}
