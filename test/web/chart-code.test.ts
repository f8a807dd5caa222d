/**
 * Copy as code, through the real kernel: a figure's chart data becomes a Vega-Lite spec (with a
 * person's edits), the spec a matplotlib cell, and that cell, run in the same sandbox, a figure
 * whose chart data is the spec's: the same kind, titles and values. One sandbox for every case.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Sandbox } from '../../src/index.js'
import { type Chart, parseChart } from '../../src/sandbox/charts.js'
import { type ChartEdit, chartSpec, chartTable } from '../../src/store/export/chart-spec.js'
import { matplotlibCell } from '../../src/web/charts/matplotlib.js'

let sandbox: Sandbox
beforeAll(async () => {
  sandbox = await Sandbox.create()
  const setup = await sandbox.runCode(
    'import numpy as np, pandas as pd, matplotlib.pyplot as plt\nrng = np.random.default_rng(3)',
  )
  expect(setup.error).toBeUndefined()
})
afterAll(async () => {
  await sandbox?.kill()
})

async function chartOf(code: string): Promise<Chart> {
  const execution = await sandbox.runCode(code)
  expect(execution.error, code).toBeUndefined()
  const chart = parseChart(execution.results.find((r) => r.png)?.chart)
  if (!chart) throw new Error(`no chart data from:\n${code}`)
  return chart
}

/** The figure, its spec (edited), the cell, and the chart that cell draws. */
async function roundTrip(code: string, edit: ChartEdit = {}) {
  const before = await chartOf(code)
  const spec = chartSpec(before, edit)
  if (!spec) throw new Error(`no spec for ${JSON.stringify(before)}`)
  const cell = matplotlibCell(spec)
  const after = await chartOf(cell)
  return { before, after, cell }
}

const values = (chart: Chart) =>
  chartTable(chart).rows.map(({ top, mid, ...row }) =>
    Object.fromEntries(
      Object.entries(row).map(([k, v]) => [k, typeof v === 'number' ? Number(v.toPrecision(9)) : v]),
    ),
  )

describe('Copy as code draws the chart that was shown', () => {
  it('a line chart switched to scatter, retitled: the same points by series', async () => {
    const { before, after } = await roundTrip(
      "x = np.arange(5)\nplt.plot(x, x ** 2, label='squares')\nplt.plot(x, x * 3, label='triples')\nplt.title('Growth')\nplt.xlabel('n')\nplt.show()",
      { mark: 'scatter', title: 'Edited', yTitle: 'value' },
    )
    expect([after.type, after.title]).toEqual(['scatter', 'Edited'])
    expect(after.type === 'scatter' && [after.x_label, after.y_label]).toEqual(['n', 'value'])
    expect(values(after)).toEqual(values(before))
  })

  it('a histogram with a reference line: the same bins, counts and line', async () => {
    const { before, after } = await roundTrip(
      "plt.hist(rng.gamma(2, 10, 700), bins=[0, 5, 10, 20, 40, 80, 160])\nplt.axvline(30, label='goal')\nplt.show()",
    )
    expect(after.type === 'bar' && after.histogram).toBe(true)
    expect(values(after)).toEqual(values(before))
    expect(after.type === 'bar' && after.reference_lines).toEqual(
      before.type === 'bar' && before.reference_lines,
    )
  })

  it('grouped, stacked and horizontal bars with their categories', async () => {
    for (const code of [
      "pd.DataFrame({'x': [3, 1, 2], 'y': [1, 2, 3]}, index=['north', 'south', 'east']).plot.bar()\nplt.show()",
      "plt.bar(['a', 'b'], [1, 2], label='low')\nplt.bar(['a', 'b'], [3, 1], bottom=[1, 2], label='high')\nplt.legend()\nplt.show()",
      "plt.barh(['first', 'second', 'third'], [4, 9, 2])\nplt.yscale('linear')\nplt.xlabel('count')\nplt.show()",
    ]) {
      const { before, after } = await roundTrip(code)
      expect(after.type === 'bar' && [after.orientation, after.x_scale, after.x_label]).toEqual(
        before.type === 'bar' && [before.orientation, before.x_scale, before.x_label],
      )
      expect(values(after)).toEqual(values(before))
    }
  })

  it('bars switched to a line: one point per category, in order', async () => {
    const { after } = await roundTrip(
      "plt.bar(['mon', 'tue', 'wed'], [5, 7, 6])\nplt.title('Visits')\nplt.show()",
      {
        mark: 'line',
      },
    )
    expect([after.type, after.title]).toEqual(['line', 'Visits'])
    expect(after.type === 'line' && after.elements[0]?.points).toEqual([
      ['mon', 5],
      ['tue', 7],
      ['wed', 6],
    ])
  })

  it('dates, a pie, a box plot and a figure with two axes', async () => {
    const dates = await roundTrip(
      "s = pd.Series([1.5, 2.5, 2.0], index=pd.date_range('2024-01-01', periods=3, freq='D'))\nplt.plot(s.index, s.values)\nplt.show()",
    )
    expect(values(dates.after)).toEqual(values(dates.before))
    const pie = await roundTrip("plt.pie([1, 3], labels=['a', 'b'])\nplt.title('Share')\nplt.show()")
    expect(values(pie.after)).toEqual(values(pie.before))
    const box = await roundTrip(
      "plt.boxplot([[1, 2, 3, 4, 5], [2, 4, 6, 8, 10]], labels=['p', 'q'])\nplt.show()",
    )
    expect(values(box.after)).toEqual(values(box.before))
    const two = await roundTrip(
      "fig, (a, b) = plt.subplots(1, 2)\na.plot([1, 2], [3, 4])\nb.bar(['x', 'y'], [1, 2])\nfig.suptitle('Both')\nplt.show()",
    )
    expect(two.after.type === 'superchart' && two.after.elements.map((c) => c.type)).toEqual(['line', 'bar'])
    expect(values(two.after)).toEqual(values(two.before))
  })
})
