/**
 * The web UI draws bars where the figure has them: charts made by the real Python in a local
 * sandbox, placed by chart-layout.ts, against the rectangles matplotlib drew (read in the same
 * cell). Positions are compared as shares of the plot, so the test holds whatever the plot's size.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Sandbox } from '../../src/index.js'
import { barsPlaced, type PlacedBarChart, parseChart } from '../../src/sandbox/charts.js'
import { type BarLayout, type BarMark, placeBars } from '../../src/web/chart-layout.js'

const WIDTH = 600
const HEIGHT = 300

interface Rect {
  x: number
  y: number
  w: number
  h: number
}

let sandbox: Sandbox
beforeAll(async () => {
  sandbox = await Sandbox.create()
  const setup = await sandbox.runCode(`
import json
import numpy as np, pandas as pd, matplotlib.pyplot as plt
rng = np.random.default_rng(3)
def report():
    print(json.dumps([{'x': float(p.get_x()), 'y': float(p.get_y()), 'w': float(p.get_width()),
                       'h': float(p.get_height())} for p in plt.gca().patches]))
    plt.show()`)
  expect(setup.error).toBeUndefined()
})
afterAll(async () => {
  await sandbox?.kill()
})

async function layout(code: string): Promise<BarLayout & { chart: PlacedBarChart; rects: Rect[] }> {
  const execution = await sandbox.runCode(`${code}\nreport()`)
  expect(execution.error).toBeUndefined()
  const chart = parseChart(execution.results.find((r) => r.png)?.chart)
  if (chart?.type !== 'bar' || !barsPlaced(chart))
    throw new Error(`not placed bars: ${JSON.stringify(chart)}`)
  const placed = placeBars(chart, WIDTH, HEIGHT)
  return { chart, ...placed, rects: JSON.parse(execution.logs.stdout.join('')) }
}

/** a / b and c / d agree (shares of the same axis). */
const expectRatio = (a: number, b: number, c: number, d: number) => expect(a / b).toBeCloseTo(c / d, 6)

describe('bars are drawn where the figure has them', () => {
  it('a histogram: its bins side by side, each as wide as its bin and as tall as its count', async () => {
    const { marks, rects } = await layout('plt.hist(rng.gamma(2, 10, 700), bins=[0, 5, 10, 20, 40, 80, 160])')
    expect(marks).toHaveLength(rects.length)
    const first = rects[0] as Rect
    const span = (rects[rects.length - 1] as Rect).x + (rects[rects.length - 1] as Rect).w - first.x
    const drawnSpan =
      (marks[marks.length - 1] as BarMark).x +
      (marks[marks.length - 1] as BarMark).width -
      (marks[0] as BarMark).x
    const tallest = Math.max(...rects.map((r) => r.h))
    const tallestMark = Math.max(...marks.map((m) => m.height))
    marks.forEach((mark, i) => {
      const rect = rects[i] as Rect
      expectRatio(mark.width, drawnSpan, rect.w, span)
      expectRatio(mark.x - (marks[0] as BarMark).x, drawnSpan, rect.x - first.x, span)
      expectRatio(mark.height, tallestMark, rect.h, tallest)
      // From the axis up: every bar ends on the same baseline.
      expect(mark.y + mark.height).toBeCloseTo(HEIGHT, 6)
      if (i > 0) expect(mark.x).toBeCloseTo((marks[i - 1] as BarMark).x + (marks[i - 1] as BarMark).width, 6)
    })
  })

  it('a line across a histogram: where the figure has it, from top to bottom', async () => {
    const { marks, rects, references } = await layout(
      "plt.hist(rng.normal(10, 2, 300), bins=12)\nplt.axvline(11.5, label='goal')",
    )
    const first = rects[0] as Rect
    const last = rects[rects.length - 1] as Rect
    const [left, right] = [
      (marks[0] as BarMark).x,
      (marks[marks.length - 1] as BarMark).x + (marks[marks.length - 1] as BarMark).width,
    ]
    expect(references).toHaveLength(1)
    const [line] = references
    expect(line?.line.label).toBe('goal')
    expectRatio((line?.x1 as number) - left, right - left, 11.5 - first.x, last.x + last.w - first.x)
    expect([line?.x2, line?.y1, line?.y2]).toEqual([line?.x1, 0, HEIGHT])
  })

  it('stacked bars: each segment on the one below it', async () => {
    const { chart, marks, rects } = await layout(`
names = ['a', 'b', 'c']
low, high = rng.integers(1, 9, 3), rng.integers(1, 9, 3)
plt.bar(names, low, label='low')
plt.bar(names, high, bottom=low, label='high')`)
    expect(chart.elements.map((b) => b.label)).toEqual(['a', 'b', 'c', 'a', 'b', 'c'])
    for (let i = 0; i < 3; i++) {
      const [below, above] = [marks[i] as BarMark, marks[i + 3] as BarMark]
      expect(above.y + above.height).toBeCloseTo(below.y, 6)
      expect(above.x).toBeCloseTo(below.x, 6)
      expectRatio(above.height, below.height, (rects[i + 3] as Rect).h, (rects[i] as Rect).h)
    }
  })

  it("categories: one tick per name, under its bars, in the figure's order", async () => {
    const { marks, xTicks } = await layout(`
df = pd.DataFrame({'x': [3, 1, 2], 'y': [1, 2, 3]}, index=['north', 'south', 'east'])
df.plot.bar()`)
    expect(xTicks.map((t) => t.label)).toEqual(['north', 'south', 'east'])
    xTicks.forEach((tick, i) => {
      const [x, y] = [marks[i] as BarMark, marks[i + 3] as BarMark]
      expect(tick.pos).toBeCloseTo((x.x + x.width / 2 + y.x + y.width / 2) / 2, 6)
      // Grouped: side by side, x left of y.
      expect(x.x + x.width).toBeLessThanOrEqual(y.x + 1e-6)
    })
  })

  it('horizontal bars: as long as their values, the first at the bottom', async () => {
    const { marks, rects, yTicks } = await layout("plt.barh(['first', 'second', 'third'], [4, 9, 2])")
    const longest = Math.max(...rects.map((r) => r.w))
    const longestMark = Math.max(...marks.map((m) => m.width))
    marks.forEach((mark, i) => {
      expectRatio(mark.width, longestMark, (rects[i] as Rect).w, longest)
      expect(mark.x).toBeCloseTo(0, 6)
    })
    expect((marks[0] as BarMark).y).toBeGreaterThan((marks[2] as BarMark).y)
    expect(yTicks.map((t) => t.label)).toEqual(['first', 'second', 'third'])
  })

  it('a log scale: heights as their logarithms', async () => {
    const { marks, rects } = await layout("plt.bar(['a', 'b', 'c'], [10, 100, 10000])\nplt.yscale('log')")
    const tops = marks.map((m) => m.y)
    // Equal steps of the logarithm are equal steps on the screen.
    const logs = rects.map((r) => Math.log10(r.y + r.h))
    expectRatio(
      (tops[0] as number) - (tops[1] as number),
      (tops[1] as number) - (tops[2] as number),
      (logs[1] as number) - (logs[0] as number),
      (logs[2] as number) - (logs[1] as number),
    )
  })
})
