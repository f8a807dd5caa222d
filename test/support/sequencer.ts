/**
 * The order test files start in: the longest first, so that the workers end together instead of
 * one waiting out a long file that started last. vitest orders by its results cache, which a fresh
 * clone (CI) does not have; it then starts the largest files first, which are not the longest (a
 * short file may build a Debian root in its beforeAll). Durations come from that cache when there
 * is one, else from test/durations.json (`node scripts/test-durations.mjs` refreshes it).
 * @module
 */
import { readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

const recorded = JSON.parse(
  readFileSync(join(import.meta.dirname, '..', 'durations.json'), 'utf8'),
) as Record<string, number>
/** A file not seen in the recorded run: a new one, likely short. */
const UNKNOWN_S = 5
/**
 * Projects whose files wait for a test template (vitest.config.ts): they start after every other
 * file, by when its build, begun with the run, is done. Not a vitest group
 * (sequence.groupOrder), which would also wait for the last of the others to end.
 */
export const STARTED_LAST = new Set(['template', 'trixie', 'bullseye'])

/**
 * A file of a project that shares its worker's module graph (isolate: false) shorter than this runs
 * in one block with the others: vitest keeps such a worker for the next file only when the next
 * file in its queue is of the same project, else it starts a new process that imports all again.
 */
const SHARED_GRAPH_SHORT_S = 20

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seconds = (file: TestSpecification) => {
      const key = `${file.project.name}:${relative(this.ctx.config.root, file.moduleId)}`
      const cached = this.ctx.cache.getFileTestResults(key)?.duration
      return cached ? cached / 1000 : (recorded[key] ?? UNKNOWN_S)
    }
    const last = (file: TestSpecification) => (STARTED_LAST.has(file.project.name) ? 1 : 0)
    const sorted = [...files].sort(
      (a, b) =>
        // Groups (sequence.groupOrder) still run one after the other.
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        last(a) - last(b) ||
        seconds(b) - seconds(a),
    )
    // The short files of each shared-graph project: together, where the longest of them stands.
    const blocks = new Map<string, TestSpecification[]>()
    for (const file of sorted) {
      if (file.project.config.isolate !== false || seconds(file) >= SHARED_GRAPH_SHORT_S) continue
      const block = blocks.get(file.project.name) ?? []
      blocks.set(file.project.name, [...block, file])
    }
    return sorted.flatMap((file) => {
      const block = blocks.get(file.project.name)
      if (!block?.includes(file)) return [file]
      return block[0] === file ? block : []
    })
  }
}
