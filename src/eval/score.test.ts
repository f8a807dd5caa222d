import { describe, expect, it } from 'vitest'
import { computeScores, extractAnswers, isEqual, pythonFloat, scoreAnswer, scoresBy } from './score.js'

describe('extractAnswers', () => {
  it('reads every @name[value], the last of a name winning, values kept as written', () => {
    const text = 'The mean is 3.\n@mean[3.0]\n@p_value[ 0.0002 ]\n@mean[3.10] trailing @bad [1] @café[x]'
    expect([...extractAnswers(text)]).toEqual([
      ['mean', '3.10'],
      ['p_value', ' 0.0002 '],
      ['café', 'x'],
    ])
  })

  it('stops a value at the first ] and does not cross lines, as the benchmark regex does', () => {
    expect([...extractAnswers('@list[[1, 2]]\n@open[1\n2]')]).toEqual([['list', '[1, 2']])
  })
})

describe('isEqual', () => {
  it('accepts equal text or numbers within 1e-6, like the benchmark', () => {
    expect(isEqual('Male', 'Male')).toBe(true)
    expect(isEqual('male', 'Male')).toBe(false)
    expect(isEqual('34.650', '34.65')).toBe(true)
    expect(isEqual(' 34.65 ', '34.65')).toBe(true)
    expect(isEqual('34.6500005', '34.65')).toBe(true)
    expect(isEqual('34.651', '34.65')).toBe(false)
    expect(isEqual('1e-7', '0')).toBe(true)
    expect(isEqual('1_000', '1000')).toBe(true)
    expect(isEqual(null, '1')).toBe(false)
    expect(isEqual('', '0')).toBe(false)
  })

  it('reads numbers as Python float() does, not as JavaScript Number() does', () => {
    expect(pythonFloat('0x10')).toBeUndefined()
    expect(pythonFloat('')).toBeUndefined()
    expect(pythonFloat('1,000')).toBeUndefined()
    expect(pythonFloat('34.65%')).toBeUndefined()
    expect(pythonFloat('-Infinity')).toBe(Number.NEGATIVE_INFINITY)
    expect(pythonFloat('.5')).toBe(0.5)
    expect(pythonFloat('1.e2')).toBe(100)
    expect(isEqual('nan', 'NaN')).toBe(false)
    expect(isEqual('inf', 'inf')).toBe(true)
  })
})

describe('scores', () => {
  const expected: Array<[string, string]> = [
    ['a', '1.00'],
    ['b', 'yes'],
  ]
  it('marks each expected sub-answer, missing ones as wrong', () => {
    expect(scoreAnswer('@a[1]\n@c[3]', expected)).toEqual([
      { name: 'a', expected: '1.00', got: '1', correct: true },
      { name: 'b', expected: 'yes', got: null, correct: false },
    ])
  })

  it('computes ABQ, PSAQ and UASQ as the benchmark defines them', () => {
    // q1: 2/2, q2: 1/2, q3: 0/1, q4: 3/4 → ABQ 1/4, PSAQ (1 + .5 + 0 + .75)/4, UASQ 6/9
    const sub = (right: number, total: number) =>
      Array.from({ length: total }, (_, i) => ({
        name: `n${i}`,
        expected: '1',
        got: '1',
        correct: i < right,
      }))
    const items = [
      { subAnswers: sub(2, 2), level: 'easy', concepts: ['A'] },
      { subAnswers: sub(1, 2), level: 'hard', concepts: ['A', 'B'] },
      { subAnswers: sub(0, 1), level: 'easy', concepts: ['B'] },
      { subAnswers: sub(3, 4), level: 'medium', concepts: [] },
    ]
    expect(computeScores(items)).toEqual({ questions: 4, abq: 0.25, psaq: 2.25 / 4, uasq: 6 / 9 })
    expect(computeScores([])).toEqual({ questions: 0, abq: 0, psaq: 0, uasq: 0 })
    const byLevel = scoresBy(items, (item) => [item.level])
    expect(Object.keys(byLevel)).toEqual(['easy', 'medium', 'hard'])
    expect(byLevel.easy).toEqual({ questions: 2, abq: 0.5, psaq: 0.5, uasq: 2 / 3 })
    const byConcept = scoresBy(items, (item) => item.concepts)
    expect(byConcept.B).toEqual({ questions: 2, abq: 0, psaq: 0.25, uasq: 1 / 3 })
  })
})
