import { describe, expect, it } from 'vitest'
import { Evidence, statedNumbers, unsupportedNumbers } from './grounding.js'

function evidence(...texts: string[]) {
  const e = new Evidence()
  for (const text of texts) e.add(text)
  return e
}

describe('statedNumbers', () => {
  it('reads currency, thousands separators, percentages, scales and signs', () => {
    const numbers = statedNumbers(
      'Revenue was $1,234.5 (12.5% up), about 1.2 million in all, a change of -3.25.',
    )
    expect(numbers.map((n) => [n.text, n.value])).toEqual([
      ['$1,234.5', 1234.5],
      ['12.5%', 12.5],
      ['1.2 million', 1_200_000],
      ['-3.25', -3.25],
    ])
  })

  it('skips list markers, small counts, identifiers and code spans', () => {
    expect(
      statedNumbers('1. Three groups: Q4 leads, x2 trails; `df.head(20)` shows 5 rows.').map((n) => n.text),
    ).toEqual([])
  })
})

describe('unsupportedNumbers', () => {
  it('accepts numbers that outputs hold, rounded or not', () => {
    const e = evidence('mean    813.0512\ncount   400')
    expect(unsupportedNumbers('The mean is 813.05 (813.1, or 813) over 400 orders.', e)).toEqual([])
  })

  it('accepts a percentage of a printed fraction and a scaled amount', () => {
    expect(unsupportedNumbers('Share: 12.3%, revenue 1.2 million.', evidence('0.1234', '1203311.2'))).toEqual(
      [],
    )
  })

  it('accepts a sign dropped in prose ("fell by 5.5")', () => {
    expect(unsupportedNumbers('It fell by 5.5 points.', evidence('change -5.49'))).toEqual([])
  })

  it('lists what no output contains, once each, as written', () => {
    expect(
      unsupportedNumbers('Mean 813.05, median 512.4, again 512.4, and 99%.', evidence('813.05')),
    ).toEqual(['512.4', '99%'])
  })

  it('does not let a number with more digits pass for a rounding it is not', () => {
    expect(unsupportedNumbers('The mean is 813.07.', evidence('813.0512'))).toEqual(['813.07'])
  })

  it('takes values from table data too', () => {
    const e = new Evidence()
    e.addValues([1.5, 2.25, null, 'x'])
    expect(unsupportedNumbers('Values 1.5 and 2.25 and 3.75.', e)).toEqual(['3.75'])
  })
})
