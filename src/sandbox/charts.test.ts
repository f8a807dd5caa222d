import { describe, expect, it } from 'vitest'
import { barsPlaced, parseChart, summarizeChart } from './charts.js'

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

describe('the fields Analyst adds', () => {
  const bin = (start: number, end: number, value: number, group = 'Age') => ({
    label: `[${start}, ${end})`,
    group,
    value,
    start,
    end,
    bottom: 0,
  })
  const histogram = (elements: unknown[]) => ({
    type: 'bar',
    title: null,
    x_label: 'Age',
    y_label: null,
    x_unit: null,
    y_unit: null,
    orientation: 'vertical',
    x_scale: 'linear',
    y_scale: 'linear',
    histogram: true,
    elements,
  })

  it('are checked when present, and bars without them are not placed', () => {
    const placed = parseChart(histogram([bin(0, 10, 3), bin(10, 20, 5)]))
    expect(placed && placed.type === 'bar' && barsPlaced(placed)).toBe(true)
    expect(parseChart(histogram([{ ...bin(0, 10, 3), start: [0] }]))).toBeUndefined()
    expect(parseChart(histogram([{ ...bin(0, 10, 3), bottom: '0' }]))).toBeUndefined()
    expect(parseChart({ ...histogram([bin(0, 10, 3)]), orientation: 'diagonal' })).toBeUndefined()
    expect(parseChart({ ...histogram([bin(0, 10, 3)]), histogram: 'yes' })).toBeUndefined()
    const e2b = parseChart({ type: 'bar', title: null, elements: [{ label: 'a', group: 'g', value: 1 }] })
    expect(e2b && e2b.type === 'bar' && barsPlaced(e2b)).toBe(false)
  })

  it('a histogram of uneven bins names each bin; several groups each get their line', () => {
    const uneven = histogram([bin(0, 10, 3), bin(10, 15, 5), bin(15, 40, 1)])
    expect(summarizeChart(parseChart(uneven) as never)).toBe(
      'histogram (x: Age): 3 bins from 0 to 40, 9 values, the fullest [10, 15) (5)\n' +
        '  bins: [0, 10) 3, [10, 15) 5, [15, 40) 1',
    )
    const stacked = histogram([bin(0, 1, 2, 'a'), bin(1, 2, 4, 'a'), bin(0, 1, 1, 'b'), bin(1, 2, 0, 'b')])
    expect(summarizeChart(parseChart(stacked) as never)).toBe(
      'histogram (x: Age)\n' +
        '  a: 2 bins from 0 to 2 (each 1 wide), 6 values, the fullest [1, 2) (4)\n    counts: 2, 4\n' +
        '  b: 2 bins from 0 to 2 (each 1 wide), 1 values, the fullest [0, 1) (1)\n    counts: 1, 0',
    )
  })

  it('a box plot says its mean', () => {
    const box = {
      type: 'box_and_whisker',
      title: null,
      x_label: null,
      y_label: null,
      x_unit: null,
      y_unit: null,
      elements: [
        {
          label: '1',
          min: 1,
          first_quartile: 2,
          median: 3,
          third_quartile: 4,
          max: 5,
          mean: 3.5,
          outliers: [],
        },
      ],
    }
    expect(summarizeChart(parseChart(box) as never)).toBe(
      'box plot\n  1: min 1, q1 2, median 3, q3 4, max 5, mean 3.5',
    )
  })
})
