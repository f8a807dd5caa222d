import { parse, View } from 'vega'
import { compile } from 'vega-lite'
import { describe, expect, it } from 'vitest'
import type { Chart } from '../../sandbox/charts.js'
import {
  type ChartEdit,
  chartMarks,
  chartSpec,
  chartTable,
  drawable,
  type VegaLiteSpec,
} from './chart-spec.js'

const axes = { x_label: 'month', y_label: 'sales', x_unit: null, y_unit: null }
const ticks = {
  x_ticks: [],
  x_tick_labels: [],
  x_scale: 'linear',
  y_ticks: [],
  y_tick_labels: [],
  y_scale: 'linear',
}

const line: Chart = {
  type: 'line',
  title: 'Sales',
  ...axes,
  ...ticks,
  reference_lines: [{ orientation: 'horizontal', at: 2, label: 'target' }],
  elements: [
    {
      label: 'north',
      points: [
        [1, 2],
        [2, 3],
      ],
    },
    {
      label: 'south',
      points: [
        [1, 1],
        [2, 5],
      ],
    },
  ],
}
const histogram: Chart = {
  type: 'bar',
  title: null,
  ...axes,
  x_scale: 'linear',
  y_scale: 'linear',
  histogram: true,
  orientation: 'vertical',
  elements: [
    { label: '[0, 1)', group: 'a', value: 3, start: 0, end: 1, bottom: 0 },
    { label: '[1, 2]', group: 'a', value: 5, start: 1, end: 2, bottom: 0 },
  ],
}
const grouped: Chart = {
  type: 'bar',
  title: 'By region',
  ...axes,
  x_scale: 'categorical',
  orientation: 'horizontal',
  elements: [
    { label: 'East', group: '2023', value: 3, start: -0.4, end: 0, bottom: 0 },
    { label: 'East', group: '2024', value: 4, start: 0, end: 0.4, bottom: 0 },
  ],
}
const pie: Chart = {
  type: 'pie',
  title: 'Share',
  elements: [
    { label: 'a', angle: 90, radius: 1 },
    { label: 'b', angle: 270, radius: 1 },
  ],
}
const box: Chart = {
  type: 'box_and_whisker',
  title: null,
  ...axes,
  elements: [{ label: 'g', min: 0, first_quartile: 1, median: 2, third_quartile: 3, max: 4, outliers: [9] }],
}
/** A spec read loosely, as JSON: the assertions say what each part must be. */
// biome-ignore lint/suspicious/noExplicitAny: any JSON
type Json = any
const layers = (spec: VegaLiteSpec | undefined) => spec?.layer as Json[]
const main = (spec: VegaLiteSpec | undefined) => layers(spec)?.[0] as Json

/** The spec compiles to Vega without errors: what vega-embed will do in the page. */
function compiles(spec: VegaLiteSpec | undefined) {
  expect(spec).toBeDefined()
  expect(() => compile(spec as never)).not.toThrow()
}

describe('chart data as a Vega-Lite spec', () => {
  it('draws a line chart by series, with zoom, hover values, and its reference lines as rules', () => {
    const spec = chartSpec(line)
    compiles(spec)
    expect(spec?.title).toBe('Sales')
    expect(spec?.data).toEqual({
      values: [
        { series: 'north', x: 1, y: 2 },
        { series: 'north', x: 2, y: 3 },
        { series: 'south', x: 1, y: 1 },
        { series: 'south', x: 2, y: 5 },
      ],
    })
    expect(main(spec).mark).toMatchObject({ type: 'line', tooltip: true })
    expect(main(spec).encoding.x).toMatchObject({ field: 'x', type: 'quantitative', title: 'month' })
    expect(main(spec).encoding.color.field).toBe('series')
    // Zoom with Ctrl or Cmd on the wheel: a plain wheel scrolls the page or notebook past the chart.
    expect(main(spec).params[0]).toMatchObject({
      bind: 'scales',
      select: { encodings: ['x', 'y'], zoom: 'wheel![event.ctrlKey || event.metaKey]' },
    })
    expect(layers(spec)[1]).toMatchObject({ mark: { type: 'rule' }, encoding: { y: { datum: 2 } } })
  })

  it('keeps zoom and pan within the data: zoomed out it shows the data, panned it stops at an edge', async () => {
    /**
     * The chart drawn nowhere; its scales' domains once the zoom selection is set to `x` and `y`
     * (its signals are named by the fields on the axes).
     */
    const viewOf = async (spec: VegaLiteSpec | undefined, fields = ['x', 'y']) => {
      const view = new View(parse(compile({ ...spec, width: 300 } as never).spec), { renderer: 'none' })
      await view.runAsync()
      return async (x?: number[], y?: number[]) => {
        if (x && y) await view.signal(`zoom_${fields[0]}`, x).signal(`zoom_${fields[1]}`, y).runAsync()
        // To a billionth: a pan's sums are floating point.
        const rounded = (scale: string) =>
          view
            .scale(scale)
            .domain()
            .map((v: number) => Math.round(v * 1e9) / 1e9)
        return [rounded('x'), rounded('y')]
      }
    }
    // The line's x runs 1 to 2; y 1 to 5 from zero (its reference line at 2 is inside).
    const zoomed = await viewOf(chartSpec(line))
    expect(await zoomed()).toEqual([
      [1, 2],
      [0, 5],
    ])
    expect(await zoomed([-10, 10], [-50, 50])).toEqual([
      [1, 2],
      [0, 5],
    ])
    expect(await zoomed([1.25, 1.5], [1, 3])).toEqual([
      [1.25, 1.5],
      [1, 3],
    ])
    expect(await zoomed([1.8, 2.3], [-4, -2])).toEqual([
      [1.5, 2],
      [0, 2],
    ])
    // A reference line past the data widens the bounds to it.
    const target = {
      ...line,
      reference_lines: [{ orientation: 'horizontal' as const, at: 8, label: 'goal' }],
    }
    expect((await (await viewOf(chartSpec(target)))([0, 100], [0, 100]))[1]).toEqual([0, 8])
    // A histogram's bins from the first's start to the last's end, its bars from zero.
    expect(await (await viewOf(chartSpec(histogram), ['start', 'top']))([-0.3, 0.2], [-1, 99])).toEqual([
      [0, 0.5],
      [0, 5],
    ])
  })

  it('applies a person’s edits: mark, titles, and an empty title hides it', () => {
    const edit: ChartEdit = { mark: 'area', title: '', xTitle: 'Month', yTitle: 'Units' }
    const spec = chartSpec(line, edit)
    compiles(spec)
    expect(spec?.title).toBeUndefined()
    expect(main(spec).mark.type).toBe('area')
    expect(main(spec).encoding.y).toMatchObject({ title: 'Units', stack: null })
    expect(main(spec).encoding.x.title).toBe('Month')
    expect(main(chartSpec(line, { mark: 'scatter' })).mark.type).toBe('point')
  })

  it('places a histogram’s bars at their bins, and runs a line through their middles', () => {
    const spec = chartSpec(histogram)
    compiles(spec)
    expect(main(spec).encoding).toMatchObject({
      x: { field: 'start', type: 'quantitative' },
      x2: { field: 'end' },
      y: { field: 'top' },
      y2: { field: 'bottom' },
    })
    const asLine = chartSpec(histogram, { mark: 'line' })
    compiles(asLine)
    expect(main(asLine).encoding.x.field).toBe('mid')
    expect(((asLine?.data ?? {}) as { values: Array<{ mid: number }> }).values.map((r) => r.mid)).toEqual([
      0.5, 1.5,
    ])
  })

  it('draws grouped horizontal bars side by side, categories upright', () => {
    const spec = chartSpec(grouped)
    compiles(spec)
    expect(main(spec).encoding.y).toMatchObject({ field: 'label', type: 'nominal' })
    expect(main(spec).encoding.x).toMatchObject({ field: 'top', type: 'quantitative' })
    expect(main(spec).encoding.yOffset.field).toBe('series')
    // No zoom on a category axis: only the values' axis.
    expect(main(spec).params[0].select.encodings).toEqual(['x'])
  })

  it('draws a pie as arcs of each share, and a box plot from its statistics', () => {
    const spec = chartSpec(pie)
    compiles(spec)
    expect(spec?.mark).toMatchObject({ type: 'arc' })
    expect(((spec?.data ?? {}) as { values: unknown[] }).values).toEqual([
      { label: 'a', share: 25 },
      { label: 'b', share: 75 },
    ])
    const boxes = chartSpec(box)
    compiles(boxes)
    expect(layers(boxes).map((l) => l.mark.type)).toEqual(['rule', 'bar', 'tick'])
  })

  it('concatenates the axes of a figure with several', () => {
    const spec = chartSpec({ type: 'superchart', title: 'Two', elements: [line, pie] })
    compiles(spec)
    expect(((spec?.concat ?? []) as unknown[]).length).toBe(2)
    expect(spec?.title).toBe('Two')
  })

  it('switches line, scatter and placed bars between their marks; pies, boxes and figures keep theirs', () => {
    expect(chartMarks(line)).toEqual(['line', 'scatter', 'area', 'bar'])
    expect(chartMarks(histogram)).toEqual(['bar', 'line', 'scatter', 'area'])
    for (const chart of [pie, box]) expect(chartMarks(chart)).toEqual([])
    // Bars without their extents (E2B's own extractor) cannot be placed: the image stands.
    const unplaced: Chart = { ...histogram, elements: [{ label: 'a', group: 'g', value: 1 }] }
    expect([drawable(unplaced), chartSpec(unplaced), chartMarks(unplaced)]).toEqual([false, undefined, []])
    expect(chartSpec({ type: 'unknown', title: null, elements: [] })).toBeUndefined()
  })

  it('gives every value as a table with the axes’ titles', () => {
    const table = chartTable(histogram)
    expect(table.columns.map((c) => c.title)).toEqual(['group', 'month', 'sales', 'start', 'end', 'bottom'])
    expect(table.rows[1]).toMatchObject({ label: '[1, 2]', value: 5, start: 1, end: 2, bottom: 0 })
  })
})
