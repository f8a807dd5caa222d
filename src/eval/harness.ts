/**
 * The harness: each question of an eval run asked in its own session, through the session service
 * (the same loop, sandbox, guard and store as `analyst ask`), several at once, each scored as it
 * ends and recorded, so that a run killed at any moment resumes without asking again what was
 * answered.
 * @module
 */
import { join } from 'node:path'
import { AnalystError } from '../errors.js'
import { advice } from '../fixes.js'
import type { SessionService } from '../session/index.js'
import type { EvalStore, StoredEvalRun } from '../store/index.js'
import type { EvalQuestion, EvalSet } from './dataset.js'
import { benchmarkPrompt } from './prompt.js'
import { allRight, type SubAnswer, scoreAnswer } from './score.js'

/** One question's outcome: what `--json` prints in `results`. */
export interface QuestionResult {
  id: number
  level: string
  concepts: string[]
  /** All sub-answers right. */
  correct: boolean
  subAnswers: SubAnswer[]
  /** The final answer ('' when the run crashed). */
  answer: string
  /** The step cap ended it without a final answer. */
  incomplete: boolean
  /** Numbers of the answer that no output of its code contains (the grounding check). */
  unsupportedNumbers: string[]
  steps: number
  tokens: number
  durationMs: number
  sessionId: string | null
  /** Why the question's run crashed (it is scored wrong); null when it ended normally. */
  error: string | null
}

export type EvalEvent =
  /** Before the first question: how many there are, and how many an earlier invocation answered. */
  | { type: 'start'; total: number; done: number; results: QuestionResult[] }
  | { type: 'question-start'; id: number }
  /** A model call of a question ended; `tokens` are its own. */
  | { type: 'tokens'; id: number; tokens: number }
  | { type: 'question-done'; result: QuestionResult }

export interface HarnessOptions {
  service: SessionService
  evals: EvalStore
  set: EvalSet
  run: StoredEvalRun
  /** The run's questions, in order. */
  questions: EvalQuestion[]
  /** Questions asked at once. @default 1 */
  concurrency?: number
  /** Whose sessions the questions are asked in (a signed-in user's `user:<id>`). @default nobody's */
  owner?: string
  /** Stops asking: questions being answered stay unfinished, to be asked again on resume. */
  signal?: AbortSignal
  onEvent?: (event: EvalEvent) => void
}

/** The detail kept in the store is the result itself. */
export function storedResult(detail: unknown): QuestionResult {
  return detail as QuestionResult
}

function reason(error: unknown): string {
  if (AnalystError.isInstance(error)) {
    const what = advice(error, 'cli')
    return what ? `${error.message} (${what})` : error.message
  }
  return error instanceof Error ? error.message : String(error)
}

/**
 * Asks every question of the run that has no result yet and returns all its results, in the
 * order of `questions` (when stopped by the signal, those that have one).
 */
export async function runEval(options: HarnessOptions): Promise<QuestionResult[]> {
  const { service, evals, run } = options
  const began = Date.now()
  const elapsedBefore = run.elapsedMs
  const recorded = await evals.evalResults(run.id)
  const done = new Map<number, QuestionResult>()
  for (const row of recorded) {
    if (row.status === 'done') done.set(row.questionId, storedResult(row.detail))
    // Killed while it was asked: its half-made session goes, the question is asked again.
    else if (row.sessionId) await service.deleteSession(row.sessionId).catch(() => {})
  }
  const emit = options.onEvent ?? (() => {})
  emit({ type: 'start', total: options.questions.length, done: done.size, results: [...done.values()] })

  const pending = options.questions.filter((question) => !done.has(question.id))
  // A session's sandbox is ended in the background: the next question need not wait for it.
  const closing: Array<Promise<void>> = []
  const ask = async (question: EvalQuestion) => {
    const result = await askOne(options, question, emit, closing)
    if (!result) return
    done.set(question.id, result)
    await evals.putEvalResult(run.id, {
      questionId: question.id,
      status: 'done',
      sessionId: result.sessionId ?? undefined,
      correct: result.correct,
      detail: result,
    })
    await evals.updateEvalRun(run.id, { elapsedMs: elapsedBefore + Date.now() - began })
    emit({ type: 'question-done', result })
  }
  const workers = Array.from({ length: Math.max(1, options.concurrency ?? 1) }, async () => {
    for (let next = pending.shift(); next && !options.signal?.aborted; next = pending.shift()) await ask(next)
  })
  await Promise.all(workers)
  await Promise.all(closing)
  await evals.updateEvalRun(run.id, { elapsedMs: elapsedBefore + Date.now() - began })
  return options.questions.flatMap((question) => {
    const result = done.get(question.id)
    return result ? [result] : []
  })
}

/** One question in a new session; undefined when the signal stopped it before it ended. */
async function askOne(
  options: HarnessOptions,
  question: EvalQuestion,
  emit: (event: EvalEvent) => void,
  closing: Array<Promise<void>>,
): Promise<QuestionResult | undefined> {
  const { service, evals, run, set, owner } = options
  // A signal of its own, so that what listens to it goes with the question, not with the eval.
  const own = new AbortController()
  const stop = () => own.abort(options.signal?.reason)
  if (options.signal?.aborted) stop()
  options.signal?.addEventListener('abort', stop, { once: true })
  const signal = own.signal
  const started = Date.now()
  let sessionId: string | null = null
  let tokens = 0
  emit({ type: 'question-start', id: question.id })
  const base = { id: question.id, level: question.level, concepts: question.concepts }
  try {
    const session = await service.createSession({
      title: `${set.name} #${question.id}: ${question.question}`.slice(0, 120),
      ...(owner ? { owner } : {}),
    })
    sessionId = session.id
    await evals.putEvalResult(run.id, {
      questionId: question.id,
      status: 'running',
      sessionId,
      correct: false,
      detail: null,
    })
    await service.addData(sessionId, [{ path: join(set.tablesDir, question.fileName) }], { owner, signal })
    const asking = service.ask(sessionId, benchmarkPrompt(question), { owner, signal })
    for (let next = await asking.next(); ; next = await asking.next()) {
      if (next.done) {
        const answer = next.value
        const subAnswers = scoreAnswer(answer.answer, question.answers)
        return {
          ...base,
          correct: allRight(subAnswers),
          subAnswers,
          answer: answer.answer,
          incomplete: answer.incomplete,
          unsupportedNumbers: answer.unsupportedNumbers,
          steps: answer.steps.length,
          tokens: answer.usage.totalTokens,
          durationMs: Date.now() - started,
          sessionId,
          error: null,
        }
      }
      if (next.value.type === 'usage') {
        tokens += next.value.usage.totalTokens
        emit({ type: 'tokens', id: question.id, tokens: next.value.usage.totalTokens })
      }
    }
  } catch (error) {
    if (signal?.aborted) return undefined
    const steps = sessionId ? (await service.history.steps(sessionId).catch(() => [])).length : 0
    return {
      ...base,
      correct: false,
      subAnswers: scoreAnswer('', question.answers),
      answer: '',
      incomplete: false,
      unsupportedNumbers: [],
      steps,
      tokens,
      durationMs: Date.now() - started,
      sessionId,
      error: reason(error),
    }
  } finally {
    options.signal?.removeEventListener('abort', stop)
    if (sessionId) closing.push(service.close(sessionId).catch(() => {}))
  }
}
