/**
 * The benchmark harness over the session service (`analyst eval`): DABench-shaped sets, the
 * benchmark's scoring, runs kept in the store and resumable, reports as text, JSON and HTML.
 * @module
 */
export { type Comparison, compareRuns, formatComparison, type RunResults } from './compare.js'
export { type EvalQuestion, type EvalSet, loadEvalSet, type Selection, selectQuestions } from './dataset.js'
export { type EvalEvent, type HarnessOptions, type QuestionResult, runEval, storedResult } from './harness.js'
export { type HtmlContext, renderHtml } from './html.js'
export { EvalProgress } from './progress.js'
export { benchmarkPrompt } from './prompt.js'
export { PUBLISHED, type PublishedScore } from './published.js'
export { RecordedModel, type Recording, readRecording } from './replay.js'
export { buildReport, type EvalReport } from './report.js'
export {
  allRight,
  computeScores,
  extractAnswers,
  isEqual,
  type Scores,
  type SubAnswer,
  scoreAnswer,
  scoresBy,
} from './score.js'
export { formatReport } from './summary.js'
export { RateGate, type RateLimitStats, rateLimitOf, throttle } from './throttle.js'
