/**
 * What every store of eval runs must do, as one suite each database runs (SQLite and
 * PostgreSQL): `describeEvalStoreConformance({ name, open })`.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { EvalStore, HistoryStore } from './types.js'

export interface OpenedEvalStores {
  history: HistoryStore
  evals: EvalStore
  close(): Promise<void>
}

export function describeEvalStoreConformance(options: {
  name: string
  open: () => Promise<OpenedEvalStores>
}) {
  describe(`eval store conformance: ${options.name}`, () => {
    let stores: OpenedEvalStores
    let evals: EvalStore
    beforeEach(async () => {
      stores = await options.open()
      evals = stores.evals
    })
    afterEach(async () => {
      await stores.close()
    })

    it('keeps a run as it went in, finds it by id prefix, lists newest first', async () => {
      const settings = { questionIds: [3, 1], mode: 'tools', maxSteps: 8 }
      const first = await evals.createEvalRun({ dataset: '/sets/dabench', model: 'openai:gpt', settings })
      expect(first).toMatchObject({ status: 'running', elapsedMs: 0, settings })
      const second = await evals.createEvalRun({
        id: 'abc-second',
        dataset: '/sets/x',
        model: 'm',
        settings: {},
      })
      expect(await evals.getEvalRun(first.id)).toEqual(first)
      expect(await evals.getEvalRun('nope')).toBeUndefined()
      expect(await evals.resolveEvalRunId('abc')).toBe('abc-second')
      expect(await evals.resolveEvalRunId(first.id.slice(0, 8))).toBe(first.id)
      expect(await evals.resolveEvalRunId('')).toBeUndefined() // fits both
      expect((await evals.listEvalRuns()).map((run) => run.id)).toEqual([second.id, first.id])
      expect(await evals.listEvalRuns({ limit: 1 })).toHaveLength(1)

      await evals.updateEvalRun(first.id, { status: 'interrupted', elapsedMs: 1234.4 })
      expect(await evals.getEvalRun(first.id)).toMatchObject({ status: 'interrupted', elapsedMs: 1234 })
      await evals.updateEvalRun(first.id, { status: 'done' })
      expect(await evals.getEvalRun(first.id)).toMatchObject({ status: 'done', elapsedMs: 1234 })
    })

    it("records each question's result once, replacing a running one, and keeps it when its session goes", async () => {
      const run = await evals.createEvalRun({ dataset: '/d', model: 'm', settings: {} })
      const other = await evals.createEvalRun({ dataset: '/d', model: 'm', settings: {} })
      const session = await stores.history.createSession({ title: 'q 7' })
      await evals.putEvalResult(run.id, {
        questionId: 7,
        status: 'running',
        sessionId: session.id,
        correct: false,
        detail: null,
      })
      const detail = { subAnswers: [{ name: 'a', expected: '1', got: '1', correct: true }], answer: '@a[1]' }
      await evals.putEvalResult(run.id, { questionId: 2, status: 'done', correct: false, detail: { x: 1 } })
      await evals.putEvalResult(run.id, {
        questionId: 7,
        status: 'done',
        sessionId: session.id,
        correct: true,
        detail,
      })
      await evals.putEvalResult(other.id, { questionId: 7, status: 'running', correct: false, detail: null })
      const results = await evals.evalResults(run.id)
      expect(results.map((r) => [r.questionId, r.status, r.correct])).toEqual([
        [2, 'done', false],
        [7, 'done', true],
      ])
      expect(results[1]).toMatchObject({ runId: run.id, sessionId: session.id, detail })
      expect(results[0]?.sessionId).toBeUndefined()

      await stores.history.deleteSession(session.id)
      expect((await evals.evalResults(run.id))[1]).toMatchObject({
        questionId: 7,
        sessionId: undefined,
        detail,
      })
      expect(await evals.evalResults(other.id)).toHaveLength(1)
    })
  })
}
