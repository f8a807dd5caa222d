import { PassThrough } from 'node:stream'
import { stripVTControlCharacters } from 'node:util'
import { describe, expect, it } from 'vitest'
import type { QuestionResult } from './harness.js'
import { EvalProgress } from './progress.js'

function sink() {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', (chunk) => {
    text += chunk
  })
  // Colors or not (CI turns them on), the words are what is checked; the redraw's \r stays.
  return { stream, text: () => stripVTControlCharacters(text.replaceAll('\r\x1b[2K', '\r')) }
}

const result = (id: number, correct: boolean, extra: Partial<QuestionResult> = {}): QuestionResult => ({
  id,
  level: 'easy',
  concepts: [],
  correct,
  subAnswers: [{ name: 'mean', expected: '1.5', got: correct ? '1.5' : '2', correct }],
  answer: '',
  incomplete: false,
  unsupportedNumbers: [],
  steps: 2,
  tokens: 6000,
  durationMs: 1500,
  sessionId: null,
  error: null,
  ...extra,
})

describe('EvalProgress', () => {
  it('redraws one line on a terminal: bar, done/total, running ABQ, tokens, time', async () => {
    const out = sink()
    const progress = new EvalProgress({ stream: out.stream, interactive: true, quiet: true })
    progress.handle({ type: 'start', total: 4, done: 1, results: [result(0, true)] })
    progress.handle({ type: 'question-start', id: 1 })
    progress.handle({ type: 'tokens', id: 1, tokens: 6500 })
    progress.handle({ type: 'question-done', result: result(1, false) })
    progress.paused(5000)
    progress.stop()
    const frames = out.text().split('\r').filter(Boolean)
    const last = frames.at(-1) ?? ''
    expect(last).toMatch(/^█{12}░{12} 2\/4 · ABQ 50\.00% · 12\.5k tokens · 0:0\d · 0 running/)
    expect(frames.some((frame) => frame.includes('rate limited 5 s'))).toBe(true)
    expect(out.text().endsWith('\n')).toBe(true)
  })

  it('prints one line per question elsewhere, and nothing when quiet', () => {
    const out = sink()
    const progress = new EvalProgress({ stream: out.stream, interactive: false, quiet: false })
    progress.handle({ type: 'start', total: 3, done: 0, results: [] })
    progress.handle({ type: 'question-done', result: result(0, true) })
    progress.handle({ type: 'question-done', result: result(1, false) })
    progress.handle({
      type: 'question-done',
      result: result(2, false, { error: 'The model request failed' }),
    })
    progress.stop()
    expect(out.text().split('\n').filter(Boolean)).toEqual([
      '✓ 0 (easy) · 2 step(s) · 1.5 s',
      '✗ 1 (easy) · 2 step(s) · 1.5 s · mean: expected 1.5, got 2',
      '✗ 2 (easy) · 2 step(s) · 1.5 s · crashed: The model request failed',
    ])
    const quiet = sink()
    const silent = new EvalProgress({ stream: quiet.stream, interactive: false, quiet: true })
    silent.handle({ type: 'start', total: 1, done: 0, results: [] })
    silent.handle({ type: 'question-done', result: result(0, true) })
    silent.stop()
    expect(quiet.text()).toBe('')
  })
})
