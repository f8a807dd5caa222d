/**
 * An eval run's results put together: what `analyst eval --json` prints and `--out` writes. Scores
 * overall, by level and by concept; tokens and time; how many answers state numbers that no output
 * of their code contains; and each question's result.
 * @module
 */
import type { EvalRunStatus, StoredEvalRun } from '../store/index.js'
import type { QuestionResult } from './harness.js'
import { computeScores, type Scores, scoresBy } from './score.js'
import type { RateLimitStats } from './throttle.js'

export interface EvalReport extends Scores {
  runId: string
  model: string
  /** The set's folder. */
  dataset: string
  /** `interrupted` when some questions are still to be asked (resume the run). */
  status: EvalRunStatus
  /** Questions the run has in all (`questions` counts those with a result). */
  planned: number
  byLevel: Record<string, Scores>
  byConcept: Record<string, Scores>
  tokens: number
  /** Time spent running, over every invocation of the run. */
  durationMs: number
  /** Questions whose run crashed (scored wrong). */
  errors: number
  /** The grounding check over the answers that were given (not crashed, not cut by the step cap). */
  grounding: { answers: number; withUnsupportedNumbers: number; share: number }
  /** Rate limits met by this invocation. */
  rateLimits: RateLimitStats
  results: QuestionResult[]
}

export function buildReport(
  run: StoredEvalRun,
  results: QuestionResult[],
  options: { planned: number; rateLimits?: RateLimitStats },
): EvalReport {
  const answered = results.filter((result) => !result.error && !result.incomplete)
  const withUnsupported = answered.filter((result) => result.unsupportedNumbers.length > 0).length
  return {
    runId: run.id,
    model: run.model,
    dataset: run.dataset,
    status: results.length >= options.planned ? 'done' : 'interrupted',
    planned: options.planned,
    ...computeScores(results),
    byLevel: scoresBy(results, (result) => [result.level]),
    byConcept: scoresBy(results, (result) => result.concepts),
    tokens: results.reduce((sum, result) => sum + result.tokens, 0),
    durationMs: run.elapsedMs,
    errors: results.filter((result) => result.error).length,
    grounding: {
      answers: answered.length,
      withUnsupportedNumbers: withUnsupported,
      share: answered.length ? withUnsupported / answered.length : 0,
    },
    rateLimits: options.rateLimits ?? { limited: 0, pausedMs: 0 },
    results,
  }
}
