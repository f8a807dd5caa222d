/**
 * Real questions of InfiAgent-DABench, answered by recorded replies whose code truly computes the
 * answers (fixtures/dabench-solutions.json: pandas and scikit-learn written for these questions),
 * through the real loop and sandbox. The answers' numbers must come from the code's output (the
 * grounding check), and the benchmark's labels decide the score. Question 8 shows a label that
 * disagrees with its own constraint: it asks for the population standard deviation, its labels
 * hold the sample one, so the faithful code loses three of its eight sub-answers.
 */
import { resolve } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { loadEvalSet, selectQuestions } from '../../src/eval/dataset.js'
import { runEval } from '../../src/eval/harness.js'
import { RecordedModel, readRecording } from '../../src/eval/replay.js'
import { buildReport } from '../../src/eval/report.js'
import { LocalProvider } from '../../src/sandbox/local/index.js'
import { DABENCH, DABENCH_MISSING } from '../support/dabench.js'
import { openTestService, type TestService } from '../support/service.js'

const SOLUTIONS = resolve('test/eval/fixtures/dabench-solutions.json')
const provider = new LocalProvider({ poolSize: 2 })
let test: TestService | undefined
afterEach(async () => {
  await test?.close()
})
afterAll(() => provider.close())

describe.skipIf(!DABENCH)(
  `InfiAgent-DABench, recorded solutions${DABENCH ? '' : ` (${DABENCH_MISSING})`}`,
  () => {
    it('scores real questions by their labels, every number backed by the code that computed it', {
      timeout: 240_000,
    }, async () => {
      const recording = await readRecording(SOLUTIONS)
      const ids = Object.keys(recording).map(Number)
      const set = await loadEvalSet(DABENCH as string)
      const questions = selectQuestions(set, { ids })
      test = await openTestService({
        provider,
        model: new RecordedModel(recording, set.questions),
        spec: 'replay:dabench-solutions.json',
        analyst: { stream: false },
      })
      const run = await test.stores.evals.createEvalRun({ dataset: set.dir, model: 'replay', settings: {} })
      const results = await runEval({
        service: test.service,
        evals: test.stores.evals,
        set,
        run,
        questions,
        concurrency: 2,
      })
      const report = buildReport(run, results, { planned: questions.length })

      for (const result of results) {
        expect(result.error, `question ${result.id}`).toBeNull()
        expect(result.unsupportedNumbers, `question ${result.id}`).toEqual([])
        expect(result.steps).toBe(recording[String(result.id)]?.filter((reply) => 'code' in reply).length)
      }
      const wrong = results.filter((r) => !r.correct)
      expect(wrong.map((r) => r.id)).toEqual([8])
      expect(wrong[0]?.subAnswers.filter((s) => !s.correct)).toEqual([
        { name: 'std_dev_fare_class1', expected: '80.86', got: '80.64', correct: false },
        { name: 'std_dev_fare_class2', expected: '13.19', got: '13.15', correct: false },
        { name: 'std_dev_fare_class3', expected: '10.04', got: '10.03', correct: false },
      ])
      const right = ids.length - 1
      const subAnswers = questions.reduce((sum, q) => sum + q.answers.length, 0)
      expect(report).toMatchObject({
        questions: ids.length,
        abq: right / ids.length,
        psaq: (right + 5 / 8) / ids.length,
        uasq: (subAnswers - 3) / subAnswers,
        grounding: { answers: ids.length, withUnsupportedNumbers: 0 },
      })
    })
  },
)
