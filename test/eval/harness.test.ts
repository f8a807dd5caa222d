/**
 * The harness over the real loop, the real sandbox (bubblewrap, Python, pandas) and a real SQLite
 * store, with recorded replies whose scores are known in advance: scoring, stored sessions,
 * concurrency, a crash mid-question, and a stopped run resumed without asking again what was done.
 */

import { join } from 'node:path'
import type { LanguageModelV3CallOptions } from '@ai-sdk/provider'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { type EvalSet, loadEvalSet } from '../../src/eval/dataset.js'
import { type EvalEvent, type QuestionResult, runEval } from '../../src/eval/harness.js'
import { benchmarkPrompt } from '../../src/eval/prompt.js'
import { RecordedModel } from '../../src/eval/replay.js'
import { buildReport } from '../../src/eval/report.js'
import { LocalProvider } from '../../src/sandbox/local/index.js'
import { SessionService } from '../../src/session/index.js'
import { openTestService, type TestService } from '../support/service.js'
import { type Answering, expectedScores, makeSet, planOf, QUESTIONS, recordingFor } from './support.js'

const provider = new LocalProvider({ poolSize: 2 })
const opened: Array<{ close(): unknown }> = []
afterEach(async () => {
  for (const item of opened.splice(0)) await item.close()
})
afterAll(() => provider.close())

/** The id of the question a model call is about. */
function questionOf(options: LanguageModelV3CallOptions): number {
  const text = JSON.stringify(options.prompt.find((m) => m.role === 'user'))
  return QUESTIONS.find((q) => text.includes(q.question))?.id ?? -1
}

/** Recorded replies, with each call counted by question, and a crash where `crash` says. */
class CountingModel extends RecordedModel {
  readonly calls = new Map<number, number>()
  constructor(
    plan: Record<number, Answering>,
    set: EvalSet,
    private readonly crash?: { question: number; call: number },
  ) {
    super(recordingFor(plan), set.questions)
  }
  override doGenerate(options: LanguageModelV3CallOptions) {
    const id = questionOf(options)
    const call = (this.calls.get(id) ?? 0) + 1
    this.calls.set(id, call)
    if (this.crash?.question === id && this.crash.call === call)
      return Promise.reject(new Error('the model exploded'))
    return super.doGenerate(options)
  }
}

async function open(model: CountingModel): Promise<TestService> {
  const test = await openTestService({ provider, model, spec: 'replay:test', analyst: { stream: false } })
  opened.push(test)
  return test
}

async function setUp() {
  const made = makeSet()
  opened.push({ close: made.remove })
  return loadEvalSet(made.dir)
}

async function evaluate(
  test: TestService,
  set: EvalSet,
  options: {
    concurrency?: number
    runId?: string
    onEvent?: (e: EvalEvent) => void
    signal?: AbortSignal
  } = {},
) {
  const run = options.runId
    ? await test.stores.evals.getEvalRun(options.runId)
    : await test.stores.evals.createEvalRun({
        dataset: set.dir,
        model: 'replay:test',
        settings: { questionIds: set.questions.map((q) => q.id) },
      })
  if (!run) throw new Error('no run')
  const results = await runEval({
    service: test.service,
    evals: test.stores.evals,
    set,
    run,
    questions: set.questions,
    concurrency: options.concurrency,
    signal: options.signal,
    onEvent: options.onEvent,
  })
  return { run, results }
}

const byId = (results: QuestionResult[]) => new Map(results.map((r) => [r.id, r]))

describe('runEval', () => {
  it('scores each question as the plan says, and keeps every question in its own stored session', async () => {
    const set = await setUp()
    const plan = planOf('right', 'wrong', 'partial', 'right', 'partial', 'silent')
    const test = await open(new CountingModel(plan, set))
    const { run, results } = await evaluate(test, set)
    const report = buildReport((await test.stores.evals.getEvalRun(run.id)) ?? run, results, {
      planned: set.questions.length,
    })
    expect(report).toMatchObject({ ...expectedScores(plan), status: 'done', errors: 0 })
    expect(report.byLevel.medium).toMatchObject(
      expectedScores(
        plan,
        QUESTIONS.filter((q) => q.level === 'medium'),
      ),
    )
    expect(report.byConcept['Correlation Analysis']).toMatchObject({ questions: 1, abq: 0, psaq: 1 / 3 })
    expect(report.tokens).toBe(results.reduce((sum, r) => sum + r.tokens, 0))
    expect(report.tokens).toBeGreaterThan(0)
    expect(report.durationMs).toBeGreaterThan(0)

    const q4 = byId(results).get(4)
    expect(q4?.subAnswers).toEqual([
      { name: 'r', expected: '-0.27', got: '-0.27', correct: true },
      { name: 'direction', expected: 'negative', got: 'negative9', correct: false },
      { name: 'n', expected: '6', got: '69', correct: false },
    ])
    expect(byId(results).get(5)?.subAnswers[0]).toMatchObject({ got: null, correct: false })

    const stored = await test.stores.evals.evalResults(run.id)
    expect(stored.map((r) => [r.questionId, r.status, r.correct])).toEqual(
      results.map((r) => [r.id, 'done', r.correct]),
    )
    // Each question: its own session, with its table, the benchmark's prompt, the step that ran.
    for (const result of results) {
      const question = set.questions.find((q) => q.id === result.id)
      if (!result.sessionId || !question) throw new Error('no session')
      const [datasets, runs, steps] = await Promise.all([
        test.stores.history.datasets(result.sessionId),
        test.stores.history.runs(result.sessionId),
        test.stores.history.steps(result.sessionId),
      ])
      expect(datasets.map((d) => d.name)).toEqual([question.fileName])
      expect(runs).toMatchObject([{ question: benchmarkPrompt(question), status: 'done' }])
      expect(runs[0]?.question).toContain(question.format)
      expect(steps).toMatchObject([{ success: true }])
      expect(steps[0]?.stdout).toMatch(/^\(\d+, \d+\)/)
      expect(result.steps).toBe(1)
    }
  })

  it('asks two questions at once, and scores a crash mid-question as wrong with its reason', async () => {
    const set = await setUp()
    const plan = planOf('right', 'right', 'right', 'right', 'right', 'right')
    const model = new CountingModel(plan, set, { question: 3, call: 2 })
    const test = await open(model)
    let running = 0
    let most = 0
    const { results } = await evaluate(test, set, {
      concurrency: 2,
      onEvent: (event) => {
        if (event.type === 'question-start') most = Math.max(most, ++running)
        if (event.type === 'question-done') running--
      },
    })
    expect(most).toBe(2)
    expect(results.map((r) => r.id)).toEqual([0, 1, 2, 3, 4, 5])
    const crashed = byId(results).get(3)
    expect(crashed).toMatchObject({ correct: false, steps: 1, answer: '' })
    expect(crashed?.error).toContain('the model exploded')
    expect(crashed?.subAnswers.every((s) => s.got === null && !s.correct)).toBe(true)
    expect(results.filter((r) => r.id !== 3).every((r) => r.correct && r.error === null)).toBe(true)
    const [storedRun] = await test.stores.history.runs(crashed?.sessionId as string)
    expect(storedRun).toMatchObject({ status: 'failed', error: expect.stringContaining('exploded') })
  })

  it('resumes a stopped run: what was answered is kept, the question cut short is asked again in a new session', async () => {
    const set = await setUp()
    const plan = planOf('right', 'wrong', 'right', 'partial', 'right', 'right')
    const first = new CountingModel(plan, set)
    const test = await open(first)
    const stop = new AbortController()
    let cutShort: number | undefined
    const partial = await evaluate(test, set, {
      signal: stop.signal,
      onEvent: (event) => {
        // Stop while question 2 is being answered (its first model call is over).
        if (event.type === 'tokens' && event.id === 2) {
          cutShort = event.id
          stop.abort()
        }
      },
    })
    expect(cutShort).toBe(2)
    expect(partial.results.map((r) => r.id)).toEqual([0, 1])
    const rows = await test.stores.evals.evalResults(partial.run.id)
    const stale = rows.find((r) => r.questionId === 2)
    expect(stale).toMatchObject({ status: 'running' })

    // The same run again (as `--resume` does), by another service over the same store, with a
    // model that counts afresh.
    const second = new CountingModel(plan, set)
    const service = new SessionService({
      history: test.stores.history,
      blobs: test.stores.blobs,
      provider,
      model: async () => ({
        model: second,
        spec: 'replay:test',
        provider: 'custom',
        modelId: 'x',
        mode: 'tools',
      }),
      analyst: { stream: false },
      cacheDir: join(test.home, 'cache'),
      idleMs: 0,
    })
    opened.push({ close: () => service.shutdown() })
    const resumed = await evaluate({ ...test, service }, set, { runId: partial.run.id })
    expect(resumed.results.map((r) => r.id)).toEqual([0, 1, 2, 3, 4, 5])
    expect([...second.calls.keys()].sort()).toEqual([2, 3, 4, 5])
    expect(resumed.results.slice(0, 2)).toEqual(partial.results)
    expect(await test.stores.history.getSession(stale?.sessionId as string)).toBeUndefined()
    const again = byId(resumed.results).get(2)
    expect(again).toMatchObject({ correct: true, error: null })
    expect(again?.sessionId).not.toBe(stale?.sessionId)
    const run = await test.stores.evals.getEvalRun(partial.run.id)
    expect(buildReport(run ?? partial.run, resumed.results, { planned: 6 })).toMatchObject({
      ...expectedScores(plan),
      status: 'done',
    })
  })
})
