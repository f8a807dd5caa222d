import { describe, expect, it } from 'vitest'
import { parseChart, summarizeChart } from './charts.js'

const line = {
  type: 'line',
  title: 'Sales',
  x_label: 'Month',
  y_label: 'Revenue (EUR)',
  x_unit: null,
  y_unit: 'EUR',
  x_ticks: [1, 2, 3],
  x_tick_labels: ['1', '2', '3'],
  x_scale: 'linear',
  y_ticks: [0, 100],
  y_tick_labels: ['0', '100'],
  y_scale: 'linear',
  elements: [
    {
      label: 'north',
      points: [
        [1, 10],
        [2, 30.123456],
        [3, 20],
      ],
    },
  ],
}

describe('parseChart', () => {
  it('accepts the shapes E2B gives and refuses others', () => {
    expect(parseChart(line)).toBe(line)
    expect(parseChart({ type: 'bar', title: null, elements: [{ label: 'a', group: 'g', value: 'x' }] })).toBe(
      undefined,
    )
    expect(parseChart({ type: 'radar', elements: [] })).toBeUndefined()
    expect(parseChart('<svg>')).toBeUndefined()
    expect(parseChart({ type: 'line', elements: [{ label: 'x', points: [[1]] }] })).toBeUndefined()
  })
})

describe('summarizeChart', () => {
  it('says what a line chart plots, with its range and where it peaks', () => {
    expect(summarizeChart(parseChart(line) as never)).toBe(
      'line chart "Sales" (x: Month, y: Revenue (EUR); x scale linear; y scale linear)\n' +
        '  north: 3 points, from (1, 10), to (3, 20), y from 10 (at x=1) to 30.12 (at x=2)',
    )
  })

  it('lists bars, pie shares and boxes, and caps long lists', () => {
    const bars = {
      type: 'bar',
      title: null,
      x_label: 'Author',
      y_label: 'Sold',
      x_unit: null,
      y_unit: null,
      elements: Array.from({ length: 15 }, (_, i) => ({ label: `A${i}`, group: 'Books', value: i * 10 })),
    }
    const text = summarizeChart(parseChart(bars) as never)
    expect(text).toMatch(/^bar chart \(x: Author, y: Sold\): A0=0, A1=10, .*A11=110; … 3 more$/)
    const pie = { type: 'pie', title: 'Share', elements: [{ label: 'No', angle: 324, radius: 1 }] }
    expect(summarizeChart(parseChart(pie) as never)).toBe('pie chart "Share": No 90%')
    const box = {
      type: 'box_and_whisker',
      title: null,
      x_label: 'Class',
      y_label: 'Score',
      x_unit: null,
      y_unit: null,
      elements: [
        {
          label: 'B',
          min: 84,
          first_quartile: 84.75,
          median: 88,
          third_quartile: 90.5,
          max: 95,
          outliers: [76],
        },
      ],
    }
    expect(summarizeChart(parseChart(box) as never)).toBe(
      'box plot (x: Class, y: Score)\n  B: min 84, q1 84.75, median 88, q3 90.5, max 95, outliers 76',
    )
  })
})
