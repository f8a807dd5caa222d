/**
 * What continuing a stored session needs: its data files, the conversation as the model saw it,
 * the cells that ran without error (re-run in order to rebuild the kernel's state), and the
 * outputs that later answers may cite.
 * @module
 */
import { existsSync } from 'node:fs'
import type { ModelMessage } from 'ai'
import type { Store } from './store.js'

export interface StoredHistory {
  data: Array<{ name: string; path: string }>
  messages: ModelMessage[]
  /** Code of the successful steps, in the order they ran. */
  cells: string[]
  /** Their outputs, as text. */
  evidence: string[]
  model?: string
}

export class MissingDataError extends Error {}

export function loadHistory(store: Store, sessionId: string): StoredHistory {
  const summary = store.summary(sessionId)
  const data = store.datasets(sessionId).map((dataset) => ({ name: dataset.name, path: dataset.sourcePath }))
  const gone = data.filter((file) => !existsSync(file.path))
  if (gone.length > 0) {
    throw new MissingDataError(
      `The session's data file ${gone.map((f) => f.path).join(', ')} is no longer there`,
    )
  }
  const steps = store.steps(sessionId)
  return {
    data,
    messages: store.messages(sessionId) as ModelMessage[],
    cells: steps.filter((step) => step.success).map((step) => step.code),
    evidence: steps.flatMap((step) => [step.stdout, ...step.results.map((result) => result.text ?? '')]),
    model: summary?.model,
  }
}
