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
 * Projects whose files wait for the trixie test template (vitest.config.ts): they start after
 * every other file, by when its build, begun with the run, is done. Not a vitest group
 * (sequence.groupOrder), which would also wait for the last of the others to end.
 */
export const STARTED_LAST = new Set(['template', 'trixie'])

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seconds = (file: TestSpecification) => {
      const key = `${file.project.name}:${relative(this.ctx.config.root, file.moduleId)}`
      const cached = this.ctx.cache.getFileTestResults(key)?.duration
      return cached ? cached / 1000 : (recorded[key] ?? UNKNOWN_S)
    }
    const last = (file: TestSpecification) => (STARTED_LAST.has(file.project.name) ? 1 : 0)
    return [...files].sort(
      (a, b) =>
        // Groups (sequence.groupOrder) still run one after the other.
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        last(a) - last(b) ||
        seconds(b) - seconds(a),
    )
  }
}
