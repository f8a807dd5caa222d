/**
 * `Result.chart` is faithful to the figure: every element is checked against what matplotlib's
 * artists hold (`ax.patches`, `get_xydata()`, `get_offsets()`, wedge angles, the artists
 * `boxplot()` returns), read in the same cell as the figure, through a real local sandbox. A figure
 * the extractor cannot read faithfully gets a chart with no data (type unknown): the UI shows its
 * PNG. The model's summary of a chart is checked here too, on charts the real Python made.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Sandbox } from '../../src/index.js'
import { parseChart, summarizeChart } from '../../src/sandbox/charts.js'

// biome-ignore lint/suspicious/noExplicitAny: chart data and the artists' data are untyped JSON
type Json = any

interface Bar {
  x: number
  y: number
  w: number
  h: number
  right: number
  top: number
}

interface AxesTruth {
  containers: Array<{ orientation: string; label: string; bars: Bar[] }>
  patches: number
  wedges: Array<{ label: string; angle: number; r: number }>
  lines: Array<{ label: string; xy: Array<[number, number]> }>
  offsets: Array<{ label: string; xy: Array<[number, number]> }>
}

/** What the artists of the current figure hold, printed before the figure is shown. */
const TRUTH = `
import json, datetime
import numpy as np, pandas as pd
import matplotlib.pyplot as plt, matplotlib.dates as mdates
from matplotlib.container import BarContainer
from matplotlib.patches import Rectangle, Wedge
rng = np.random.default_rng(7)

def num(value):
    value = float(value)
    return value if np.isfinite(value) else None

def _axes_truth(ax):
    def finite(xy):
        xy = np.ma.filled(np.ma.asarray(xy, float), np.nan)
        return xy[np.isfinite(xy).all(axis=1)].tolist()
    return {
        'containers': [
            {'orientation': c.orientation, 'label': c.get_label(),
             'bars': [{'x': num(p.get_x()), 'y': num(p.get_y()), 'w': num(p.get_width()),
                       'h': num(p.get_height()), 'right': num(p.get_x() + p.get_width()),
                       'top': num(p.get_y() + p.get_height())} for p in c]}
            for c in ax.containers if isinstance(c, BarContainer)],
        'patches': len(ax.patches),
        'wedges': [{'label': w.get_label(), 'angle': float(w.theta2) - float(w.theta1), 'r': float(w.r)}
                   for w in ax.patches if isinstance(w, Wedge)],
        'lines': [{'label': l.get_label(), 'xy': finite(l.get_xydata())} for l in ax.get_lines()
                  if l.get_transform() is ax.transData],
        'offsets': [{'label': c.get_label(), 'xy': finite(c.get_offsets())} for c in ax.collections],
    }

def report(**extra):
    print(json.dumps({'axes': [_axes_truth(ax) for ax in plt.gcf().axes], **extra}, default=str))
    plt.show()
`

let sandbox: Sandbox
beforeAll(async () => {
  sandbox = await Sandbox.create()
  const setup = await sandbox.runCode(TRUTH)
  expect(setup.error).toBeUndefined()
})
afterAll(async () => {
  await sandbox?.kill()
})

/** Runs code that draws one figure and ends with report(...): the figure's chart and its artists. */
async function draw(code: string): Promise<{ chart: Json; truth: { axes: AxesTruth[] } & Json }> {
  const execution = await sandbox.runCode(code)
  expect(execution.error).toBeUndefined()
  const figures = execution.results.filter((result) => result.png)
  expect(figures).toHaveLength(1)
  return { chart: figures[0]?.chart, truth: JSON.parse(execution.logs.stdout.join('')) }
}

const DAY_MS = 86_400_000

/** Bars as the chart has them, against one container's rectangles. */
function expectBars(elements: Json[], bars: Bar[], horizontal = false) {
  expect(elements).toHaveLength(bars.length)
  elements.forEach((element, i) => {
    const bar = bars[i] as Bar
    if (horizontal) {
      expect([element.value, element.bottom, element.start, element.end]).toEqual([
        bar.w,
        bar.x,
        bar.y,
        bar.top,
      ])
    } else {
      expect([element.value, element.bottom, element.start, element.end]).toEqual([
        bar.h,
        bar.y,
        bar.x,
        bar.right,
      ])
    }
  })
}

const UNREADABLE = { type: 'unknown', elements: [] }

describe('histograms', () => {
  for (const bins of [5, 20, 50]) {
    it(`with ${bins} bins: one element per bin, with its edges and its count`, async () => {
      const { chart, truth } = await draw(`
df = pd.DataFrame({'Age': rng.normal(38, 14, 891).clip(0, 80)})
plt.hist(df['Age'], bins=${bins})
plt.xlabel('Age')
report()`)
      const [container] = truth.axes[0].containers
      expect(chart).toMatchObject({ type: 'bar', histogram: true, orientation: 'vertical', x_label: 'Age' })
      expectBars(chart.elements, container.bars)
      // Each bin is named by its own range, never by the axis's ticks.
      expect(new Set(chart.elements.map((b: Json) => b.label)).size).toBe(bins)
      for (const element of chart.elements) expect(element.label).toMatch(/^\[-?[\d.e+-]+, -?[\d.e+-]+[)\]]$/)
      // The bins tile the axis: each starts where the one before it ends.
      for (let i = 1; i < bins; i++) {
        expect(chart.elements[i].start).toBeCloseTo(chart.elements[i - 1].end, 9)
      }
    })
  }

  it("a labelled histogram's group is its label", async () => {
    const { chart, truth } = await draw("plt.hist(rng.normal(0, 1, 200), bins=8, label='Height')\nreport()")
    expect(chart.elements.map((b: Json) => b.group)).toEqual(Array(8).fill('Height'))
    expectBars(chart.elements, truth.axes[0].containers[0].bars)
  })

  it('stacked: each dataset a group, its bars from the top of the one below', async () => {
    const { chart, truth } = await draw(
      "plt.hist([rng.normal(0, 1, 300), rng.normal(1, 1, 300)], bins=10, stacked=True, label=['a', 'b'])\nreport()",
    )
    const [a, b] = truth.axes[0].containers
    expect(chart.histogram).toBe(true)
    expectBars(
      chart.elements.filter((e: Json) => e.group === 'a'),
      a.bars,
    )
    expectBars(
      chart.elements.filter((e: Json) => e.group === 'b'),
      b.bars,
    )
    expect(b.bars.some((bar: Bar) => bar.y > 0)).toBe(true)
  })

  it('the summary a model reads of a 50-bin histogram has every bin', async () => {
    const { chart, truth } = await draw(
      "plt.hist(rng.normal(38, 14, 891), bins=50)\nplt.xlabel('Age')\nreport()",
    )
    const bars = truth.axes[0].containers[0].bars as Bar[]
    const summary = summarizeChart(parseChart(chart) as never)
    expect(summary).toMatch(/^histogram \(x: Age\): 50 bins from /)
    expect(summary).toContain(`${bars.reduce((sum, bar) => sum + bar.h, 0)} values`)
    // Every count, in order, with nothing left out.
    const counts = summary.match(/counts: (.*)$/m)?.[1]
    expect(counts?.split(', ').map(Number)).toEqual(bars.map((bar) => bar.h))
    expect(summary).not.toContain('more')
  })
})

describe('bars', () => {
  it('more bars than ticks on a numeric axis: every bar, at its own position', async () => {
    const { chart, truth } = await draw('plt.bar(range(30), rng.integers(1, 100, 30))\nreport()')
    const bars = truth.axes[0].containers[0].bars as Bar[]
    expectBars(chart.elements, bars)
    chart.elements.forEach((b: Json, i: number) => {
      expect(Number(b.label)).toBeCloseTo((bars[i] as Bar).x + (bars[i] as Bar).w / 2, 9)
    })
    expect(chart.histogram).toBe(false)
  })

  it('more categories than ticks: each bar named by its own category', async () => {
    const { chart, truth } = await draw(`
from matplotlib.ticker import MaxNLocator
names = ['item %d' % i for i in range(30)]
fig, ax = plt.subplots()
ax.bar(names, rng.integers(1, 100, 30))
ax.xaxis.set_major_locator(MaxNLocator(5))
report(names=names)`)
    expectBars(chart.elements, truth.axes[0].containers[0].bars)
    expect(chart.elements.map((b: Json) => b.label)).toEqual(truth.names)
    expect(chart.x_scale).toBe('categorical')
  })

  it('equal heights are vertical bars, not horizontal ones', async () => {
    const { chart, truth } = await draw("plt.bar(['a', 'b', 'c'], [2, 2, 2])\nplt.xlabel('Letter')\nreport()")
    expect(chart).toMatchObject({ orientation: 'vertical', x_label: 'Letter', y_label: null })
    expectBars(chart.elements, truth.axes[0].containers[0].bars)
    expect(chart.elements.map((b: Json) => b.label)).toEqual(['a', 'b', 'c'])
  })

  it('horizontal bars: values are the widths, labels on the y axis', async () => {
    const { chart, truth } = await draw(
      "plt.barh(['north', 'south', 'east', 'west'], [5, 9, 2, 7])\nplt.xlabel('Sales')\nplt.ylabel('Region')\nreport()",
    )
    expect(chart).toMatchObject({ orientation: 'horizontal', x_label: 'Region', y_label: 'Sales' })
    expect(truth.axes[0].containers[0].orientation).toBe('horizontal')
    expectBars(chart.elements, truth.axes[0].containers[0].bars, true)
    expect(chart.elements.map((b: Json) => b.label)).toEqual(['north', 'south', 'east', 'west'])
  })

  it('stacked: each segment its own height and base', async () => {
    const { chart, truth } = await draw(`
names = ['Q1', 'Q2', 'Q3', 'Q4']
a, b = rng.integers(1, 50, 4), rng.integers(1, 50, 4)
plt.bar(names, a, label='online')
plt.bar(names, b, bottom=a, label='shops')
report(names=names)`)
    const [online, shops] = truth.axes[0].containers
    expectBars(chart.elements.slice(0, 4), online.bars)
    expectBars(chart.elements.slice(4), shops.bars)
    expect(chart.elements.map((b: Json) => `${b.group} ${b.label}`)).toEqual([
      ...truth.names.map((n: string) => `online ${n}`),
      ...truth.names.map((n: string) => `shops ${n}`),
    ])
  })

  it('grouped, with tick names at the groups: every bar named by its group', async () => {
    const { chart, truth } = await draw(`
names = ['Adelie', 'Chinstrap', 'Gentoo']
x = np.arange(3)
fig, ax = plt.subplots()
for i, (sex, values) in enumerate({'male': [38, 48, 47], 'female': [37, 46, 45], 'unknown': [40, 47, 48]}.items()):
    ax.bar(x + 0.25 * i, values, 0.25, label=sex)
ax.set_xticks(x + 0.25, names)
report(names=names)`)
    const containers = truth.axes[0].containers
    expect(chart.elements).toHaveLength(9)
    containers.forEach((container: Json, i: number) => {
      const group = chart.elements.slice(i * 3, i * 3 + 3)
      expectBars(group, container.bars)
      expect(group.map((b: Json) => b.group)).toEqual(Array(3).fill(container.label))
      expect(group.map((b: Json) => b.label)).toEqual(truth.names)
    })
  })

  it("seaborn's histplot: its bins, past the empty container it leaves behind", async () => {
    const { chart, truth } = await draw(`
import seaborn as sns
sns.histplot(x=rng.normal(0, 1, 200), bins=12)
report()`)
    const containers = truth.axes[0].containers.filter((c: Json) => c.bars.length === truth.axes[0].patches)
    expect(containers).toHaveLength(1)
    expect(chart.histogram).toBe(true)
    expectBars(chart.elements, containers[0].bars)
  })

  it("pandas' grouped bars: named by the index", async () => {
    const { chart, truth } = await draw(`
df = pd.DataFrame({'a': [1, 2, 3], 'b': [4, 5, 6]}, index=['p', 'q', 'r'])
df.plot.bar()
report(index=list(df.index))`)
    const [a, b] = truth.axes[0].containers
    expectBars(chart.elements.slice(0, 3), a.bars)
    expectBars(chart.elements.slice(3), b.bars)
    expect(chart.elements.map((e: Json) => e.label)).toEqual([...truth.index, ...truth.index])
    expect(chart.elements.map((e: Json) => e.group)).toEqual(['a', 'a', 'a', 'b', 'b', 'b'])
  })

  it('dates on the x axis: each bar at its own dates, more bars than ticks', async () => {
    const { chart, truth } = await draw(`
days = pd.date_range('2024-01-01', periods=40)
plt.bar(days, rng.integers(1, 9, 40))
report(days=[d.isoformat() for d in days])`)
    const bars = truth.axes[0].containers[0].bars as Bar[]
    expect(chart.x_scale).toBe('datetime')
    expect(chart.elements).toHaveLength(40)
    chart.elements.forEach((element: Json, i: number) => {
      const bar = bars[i] as Bar
      expect(element.value).toBe(bar.h)
      expect(Date.parse(element.start)).toBeCloseTo(bar.x * DAY_MS, -1)
      expect(Date.parse(element.end)).toBeCloseTo(bar.right * DAY_MS, -1)
      expect(Date.parse(element.label)).toBe(Date.parse(`${truth.days[i]}Z`))
    })
  })

  it('a log scale', async () => {
    const { chart, truth } = await draw("plt.bar(['a', 'b', 'c'], [1, 10, 1000], log=True)\nreport()")
    expect(chart).toMatchObject({ y_scale: 'log', x_scale: 'categorical' })
    expectBars(chart.elements, truth.axes[0].containers[0].bars)
  })
})

describe('lines and scatter', () => {
  it('lines: every point, labelled or numbered', async () => {
    const { chart, truth } = await draw(`
x = np.linspace(0, 10, 200)
plt.plot(x, np.sin(x), label='sin')
plt.plot(x, np.cos(x))
report()`)
    expect(chart.type).toBe('line')
    const lines = truth.axes[0].lines
    expect(chart.elements.map((e: Json) => e.points)).toEqual(lines.map((l: Json) => l.xy))
    expect(chart.elements[0].label).toBe('sin')
    expect(chart.elements[1].label).not.toMatch(/^_/)
  })

  it('a log scale', async () => {
    const { chart, truth } = await draw(
      "x = np.linspace(1, 50, 50)\nplt.plot(x, np.exp(x))\nplt.yscale('log')\nreport()",
    )
    expect(chart).toMatchObject({ type: 'line', y_scale: 'log' })
    expect(chart.elements[0].points).toEqual(truth.axes[0].lines[0].xy)
  })

  it('dates from pandas: each point at the date it stands for', async () => {
    const { chart, truth } = await draw(`
s = pd.Series(rng.integers(1, 9, 12), index=pd.date_range('2024-01-07', periods=12, freq='W'))
s.plot()
report(starts=[p.start_time.isoformat() for p in plt.gca().get_lines()[0].get_xdata()], values=s.tolist())`)
    expect(chart.x_scale).toBe('datetime')
    expect(chart.elements[0].points).toEqual(
      truth.starts.map((start: string, i: number) => [start, truth.values[i]]),
    )
    // Ticks are dates of 2024, not the week numbers pandas plots.
    for (const tick of chart.x_ticks) expect(new Date(tick).getUTCFullYear()).toBe(2024)
  })

  it('scatter with and without labels: every offset, no private labels', async () => {
    const { chart, truth } = await draw(`
plt.scatter(rng.normal(size=40), rng.normal(size=40))
plt.scatter(rng.normal(size=25), rng.normal(size=25), label='treated')
report()`)
    expect(chart.type).toBe('scatter')
    const offsets = truth.axes[0].offsets
    expect(chart.elements.map((e: Json) => e.points)).toEqual(offsets.map((o: Json) => o.xy))
    expect(chart.elements[0].label).not.toMatch(/^_/)
    expect(chart.elements[1].label).toBe('treated')
  })

  it('scatter with dates and missing values: the points drawn, at their dates', async () => {
    const { chart, truth } = await draw(`
days = pd.date_range('2024-03-01', periods=6)
plt.scatter(days, [1, np.nan, 3, 4, np.nan, 6])
report()`)
    const xy = truth.axes[0].offsets[0].xy as Array<[number, number]>
    expect(xy).toHaveLength(4)
    expect(chart.x_scale).toBe('datetime')
    expect(chart.elements[0].points.map((p: Json) => [Date.parse(p[0]), p[1]])).toEqual(
      xy.map(([x, y]) => [x * DAY_MS, y]),
    )
  })

  it('markers without a line are marked so', async () => {
    const { chart, truth } = await draw(
      "plt.plot([1, 2, 3], [3, 1, 2], 'o', label='data')\nplt.plot([1, 3], [2.5, 1.5], '-', label='fit')\nreport()",
    )
    expect(chart.elements.map((e: Json) => e.points)).toEqual(truth.axes[0].lines.map((l: Json) => l.xy))
    expect(chart.elements.map((e: Json) => e.markers_only === true)).toEqual([true, false])
  })

  it('a line with missing values at its ends: the points drawn', async () => {
    const { chart, truth } = await draw(
      'pd.Series([np.nan, np.nan, 1.0, 4.0, 2.0, 5.0]).rolling(2).mean().plot()\nreport()',
    )
    expect(truth.axes[0].lines[0].xy).toHaveLength(3)
    expect(chart.elements[0].points).toEqual(truth.axes[0].lines[0].xy)
  })
})

describe('pies and box plots', () => {
  it('pie: each wedge its angle and label', async () => {
    const { chart, truth } = await draw(
      "plt.pie([3, 5, 12, 1], labels=['a', 'b', 'c', 'd'], autopct='%1.0f%%')\nreport()",
    )
    const wedges = truth.axes[0].wedges
    expect(chart.elements.map((e: Json) => e.label)).toEqual(wedges.map((w: Json) => w.label))
    chart.elements.forEach((element: Json, i: number) => {
      // Matplotlib computes the angles in single precision: what is past it is noise.
      expect(Math.abs(element.angle - wedges[i].angle)).toBeLessThan(1e-5 * 360)
      expect(element.radius).toBe(wedges[i].r)
    })
  })

  const boxTruth = (axis: 'x' | 'y', means = false) => `
truth = [{'min': r['whiskers'][2 * i].get_${axis}data()[1], 'first_quartile': r['whiskers'][2 * i].get_${axis}data()[0],
          'median': r['medians'][i].get_${axis}data()[0], 'third_quartile': r['whiskers'][2 * i + 1].get_${axis}data()[0],
          'max': r['whiskers'][2 * i + 1].get_${axis}data()[1],
          'outliers': [float(v) for v in r['fliers'][i].get_${axis}data()]${means ? `, 'mean': r['means'][i].get_${axis}data()[0]` : ''}}
         for i in range(len(r['medians']))]
report(boxes=truth)`

  it('box plot, drawn with lines: each box from its artists, named by its label', async () => {
    const { chart, truth } = await draw(`
data = [rng.normal(50, 10, 80).tolist() + [110], rng.normal(60, 5, 60).tolist(), rng.normal(40, 20, 90).tolist()]
r = plt.boxplot(data, labels=['A', 'B', 'C'])
${boxTruth('y')}`)
    expect(chart.type).toBe('box_and_whisker')
    expect(chart.elements).toEqual(
      truth.boxes.map((box: Json, i: number) => ({ label: ['A', 'B', 'C'][i], ...box })),
    )
  })

  it('box plot with patches, horizontal, with means', async () => {
    const { chart, truth } = await draw(`
plt.figure()
data = [rng.normal(5, 1, 50), rng.normal(7, 2, 50)]
r = plt.boxplot(data, vert=False, patch_artist=True, showmeans=True)
plt.xlabel('Score')
${boxTruth('x', true)}`)
    expect(chart).toMatchObject({ type: 'box_and_whisker', y_label: 'Score' })
    expect(chart.elements).toEqual(
      truth.boxes.map((box: Json, i: number) => ({ label: String(i + 1), ...box })),
    )
  })

  it('one box with one outlier: a flier, not a mean', async () => {
    const { chart, truth } = await draw(`
r = plt.boxplot([rng.normal(0, 1, 40).tolist() + [9.0]])
${boxTruth('y')}`)
    expect(truth.boxes[0].outliers).toHaveLength(1)
    expect(chart.elements).toEqual([{ label: '1', ...truth.boxes[0] }])
  })

  it('one box is not read sideways', async () => {
    const { chart, truth } = await draw(`
r = plt.boxplot([rng.normal(0, 1, 40)])
plt.ylabel('Value')
${boxTruth('y')}`)
    expect(chart).toMatchObject({ type: 'box_and_whisker', y_label: 'Value', x_label: null })
    expect(chart.elements).toEqual([{ label: '1', ...truth.boxes[0] }])
  })
})

describe('lines across the plot', () => {
  it('a histogram with its mean marked: the bins, and the line where it stands', async () => {
    const { chart, truth } = await draw(`
v = rng.normal(0, 1, 100)
plt.hist(v, bins=10)
line = plt.axvline(v.mean(), color='r', linestyle='--', label='mean')
report(at=float(line.get_xdata()[0]))`)
    expect(chart.histogram).toBe(true)
    expectBars(chart.elements, truth.axes[0].containers[0].bars)
    expect(chart.reference_lines).toEqual([{ orientation: 'vertical', at: truth.at, label: 'mean' }])
    expect(summarizeChart(parseChart(chart) as never)).toContain(`lines across the plot: vertical at `)
  })

  it('a line chart with a level at 0 and a date marked', async () => {
    const { chart, truth } = await draw(`
days = pd.date_range('2024-01-01', periods=30)
plt.plot(days, rng.normal(size=30))
plt.axhline(0)
plt.axvline(days[10], label='launch')
report(day=days[10].isoformat())`)
    expect(chart.type).toBe('line')
    expect(chart.elements).toHaveLength(1)
    expect(chart.elements[0].points.map((p: Json) => p[1])).toEqual(
      truth.axes[0].lines[0].xy.map((p: Json) => p[1]),
    )
    expect(chart.reference_lines).toHaveLength(2)
    expect(chart.reference_lines[0]).toEqual({ orientation: 'horizontal', at: 0, label: null })
    expect(chart.reference_lines[1]).toMatchObject({ orientation: 'vertical', label: 'launch' })
    expect(Date.parse(chart.reference_lines[1].at)).toBe(Date.parse(`${truth.day}Z`))
  })
})

describe('what cannot be read faithfully has no data', () => {
  it('a line across part of the plot', async () => {
    const { chart } = await draw(
      'plt.hist(rng.normal(0, 1, 100), bins=10)\nplt.axvline(0, ymax=0.5)\nreport()',
    )
    expect(chart).toMatchObject(UNREADABLE)
  })

  it('a box plot with a line across it', async () => {
    const { chart } = await draw('plt.boxplot([rng.normal(0, 1, 40)])\nplt.axhline(0)\nreport()')
    expect(chart).toMatchObject(UNREADABLE)
  })

  it('bars beside a rectangle that is no bar', async () => {
    const { chart } = await draw(`
from matplotlib.patches import Rectangle
fig, ax = plt.subplots()
ax.bar(['a', 'b'], [1, 2])
ax.add_patch(Rectangle((0, 0), 0.5, 3))
report()`)
    expect(chart).toMatchObject(UNREADABLE)
  })

  it('a step plot, drawn unlike its points', async () => {
    const { chart } = await draw('plt.step([1, 2, 3], [1, 3, 2])\nreport()')
    expect(chart).toMatchObject(UNREADABLE)
  })

  it('a line with a gap: the image still arrives', async () => {
    const { chart } = await draw("plt.plot([1, 2, 3, 4], [1, float('nan'), 3, 4])\nreport()")
    expect(chart).toMatchObject(UNREADABLE)
  })

  it('a line of more points than a chart carries is not cut short', async () => {
    const { chart } = await draw('plt.plot(np.arange(20_000), rng.normal(size=20_000))\nreport()')
    expect(chart).toMatchObject(UNREADABLE)
  })
})
