/** The report of a run as JSON, text and HTML, from results whose scores are known. */
import { describe, expect, it } from 'vitest'
import type { StoredEvalRun } from '../store/index.js'
import type { EvalQuestion } from './dataset.js'
import type { QuestionResult } from './harness.js'
import { renderHtml } from './html.js'
import { buildReport } from './report.js'
import { scoreAnswer } from './score.js'
import { formatReport } from './summary.js'

const run: StoredEvalRun = {
  id: '3f2a1b2c-0000-4000-8000-000000000000',
  dataset: '/sets/dabench',
  model: 'openai:gpt-test',
  settings: {},
  status: 'running',
  elapsedMs: 65_000,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
}

function result(id: number, answer: string, extra: Partial<QuestionResult> = {}): QuestionResult {
  const subAnswers = scoreAnswer(answer, [
    ['a', '1'],
    ['b', 'x'],
  ])
  return {
    id,
    level: id % 2 ? 'hard' : 'easy',
    concepts: ['Summary Statistics'],
    correct: subAnswers.every((s) => s.correct),
    subAnswers,
    answer,
    incomplete: false,
    unsupportedNumbers: [],
    steps: 1,
    tokens: 100,
    durationMs: 1000,
    sessionId: null,
    error: null,
    ...extra,
  }
}

const results = [
  result(0, '@a[1]\n@b[x]'),
  result(1, 'It has 7 rows. @a[1] <script>alert(1)</script> @b[<img src=x onerror=alert(1)>]', {
    unsupportedNumbers: ['7'],
  }),
  result(2, '', { error: 'The model request failed (HTTP 500)' }),
]

describe('buildReport', () => {
  it('sums the run: scores, tokens, crashes, grounding, and interrupted when questions are left', () => {
    const report = buildReport(run, results, { planned: 4 })
    expect(report).toMatchObject({
      runId: run.id,
      status: 'interrupted',
      questions: 3,
      planned: 4,
      abq: 1 / 3,
      psaq: 1.5 / 3,
      uasq: 3 / 6,
      tokens: 300,
      durationMs: 65_000,
      errors: 1,
      grounding: { answers: 2, withUnsupportedNumbers: 1, share: 0.5 },
    })
    expect(Object.keys(report.byLevel)).toEqual(['easy', 'hard'])
    expect(buildReport(run, results, { planned: 3 }).status).toBe('done')
  })
})

describe('formatReport', () => {
  it('prints the scores by level and concept, the published figures as such, and what failed', () => {
    const text = formatReport(buildReport(run, results, { planned: 4 }))
    expect(text).toContain('3 of 4 questions (interrupted: resume with --resume 3f2a1b2c)')
    expect(text).toMatch(/overall\s+33\.33%\s+50\.00%\s+50\.00%\s+3/)
    expect(text).toMatch(/Summary Statistics\s+33\.33%/)
    expect(text).toContain('Published on InfiAgent-DABench (not measured here)')
    expect(text).toContain('Wrong (2): 1, 2')
    expect(text).toContain('2 crashed: The model request failed (HTTP 500)')
    expect(text).toContain('50.00% (1 of 2)')
  })
})

describe('renderHtml', () => {
  it('escapes everything the model and the code wrote, and puts the failed questions first', () => {
    const questions = new Map<number, EvalQuestion>(
      [0, 1, 2].map((id) => [
        id,
        {
          id,
          question: `Question <b>${id}</b>?`,
          concepts: [],
          constraints: '',
          format: '@a[v]\n@b[v]',
          fileName: 'a.csv',
          level: 'easy',
          answers: [],
        },
      ]),
    )
    const html = renderHtml(buildReport(run, results, { planned: 3 }), { questions, sessions: new Map() })
    expect(html).not.toContain('<script>')
    expect(html).not.toContain('<img src=x')
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    expect(html).toContain('Question &lt;b&gt;1&lt;/b&gt;?')
    expect(html.indexOf('id="q1"')).toBeLessThan(html.indexOf('id="q0"'))
    expect(html.indexOf('id="q2"')).toBeLessThan(html.indexOf('id="q0"'))
    expect(html).toContain('<mark title="not found in any output of the code">7</mark>')
    expect(html).toContain('The model request failed (HTTP 500)')
  })
})
