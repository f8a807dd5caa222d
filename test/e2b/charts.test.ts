/**
 * `Result.chart` through the official SDK: each chart type of E2B's own chart tests
 * (js/tests/charts in e2b-dev/code-interpreter), with their code and their expected values, and a
 * histogram, which E2B's own extractor gets wrong (test/sandbox/charts.test.ts has the rest).
 */
import { Sandbox } from '@e2b/code-interpreter'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type E2BServer, startE2BServer } from './server.js'

let e2b: E2BServer
let sandbox: Sandbox
beforeAll(async () => {
  e2b = await startE2BServer()
  sandbox = await Sandbox.create()
  await sandbox.runCode('import datetime\nimport numpy as np\nimport matplotlib.pyplot as plt')
})
afterAll(async () => {
  await sandbox?.kill()
  await e2b?.close()
})

// biome-ignore lint/suspicious/noExplicitAny: chart data is untyped JSON, as in E2B's tests
type Json = any

async function chartOf(code: string): Promise<Json> {
  const execution = await sandbox.runCode(code)
  expect(execution.error).toBeUndefined()
  expect(execution.results[0]?.png).toBeDefined()
  return execution.results[0]?.chart
}

describe('charts as data', () => {
  it('bar', async () => {
    const chart = await chartOf(`
authors = ['Author A', 'Author B', 'Author C', 'Author D']
sales = [100, 200, 300, 400]
plt.figure(figsize=(10, 6))
plt.bar(authors, sales, label='Books Sold', color='blue')
plt.xlabel('Authors')
plt.ylabel('Number of Books Sold')
plt.title('Book Sales by Authors')
plt.tight_layout()
plt.show()
`)
    expect(chart).toMatchObject({
      type: 'bar',
      title: 'Book Sales by Authors',
      x_label: 'Authors',
      y_label: 'Number of Books Sold',
      x_unit: null,
      y_unit: null,
    })
    expect(chart.elements.map((b: { value: number }) => b.value)).toEqual([100, 200, 300, 400])
    expect(chart.elements.map((b: { group: string }) => b.group)).toEqual(Array(4).fill('Books Sold'))
    expect(chart.elements.map((b: { label: string }) => b.label)).toEqual([
      'Author A',
      'Author B',
      'Author C',
      'Author D',
    ])
  })

  it("histogram: one bar per bin, at the bin's edges, as the artists hold them", async () => {
    const execution = await sandbox.runCode(`
import json
values = np.random.default_rng(5).normal(40, 12, 600)
counts, edges, patches = plt.hist(values, bins=20)
print(json.dumps({'counts': counts.tolist(), 'edges': edges.tolist(), 'x': [float(p.get_x()) for p in patches],
                  'right': [float(p.get_x() + p.get_width()) for p in patches]}))
plt.show()
`)
    expect(execution.error).toBeUndefined()
    const truth = JSON.parse(execution.logs.stdout.join(''))
    const chart = execution.results[0]?.chart as Json
    expect(chart).toMatchObject({ type: 'bar', histogram: true, orientation: 'vertical' })
    expect(chart.elements.map((b: Json) => b.value)).toEqual(truth.counts)
    expect(chart.elements.map((b: Json) => b.start)).toEqual(truth.x)
    expect(chart.elements.map((b: Json) => b.end)).toEqual(truth.right)
    // The bins np.histogram made, to float noise (matplotlib places each bar from its centre).
    chart.elements.forEach((b: Json, i: number) => {
      expect(b.start).toBeCloseTo(truth.edges[i], 9)
      expect(b.end).toBeCloseTo(truth.edges[i + 1], 9)
    })
  })

  it('line, with a datetime axis and units', async () => {
    const chart = await chartOf(`
dates = [datetime.date(2023, 9, 1) + datetime.timedelta(seconds=i) for i in range(100)]
x = np.linspace(0, 2*np.pi, 100)
plt.figure(figsize=(10, 6))
plt.plot(dates, np.sin(x), label='sin(x)')
plt.plot(dates, np.cos(x), label='cos(x)')
plt.xlabel("Time (s)")
plt.ylabel("Amplitude (Hz)")
plt.title('Plot of sin(x) and cos(x)')
plt.show()
`)
    expect(chart).toMatchObject({
      type: 'line',
      title: 'Plot of sin(x) and cos(x)',
      x_label: 'Time (s)',
      y_label: 'Amplitude (Hz)',
      x_scale: 'datetime',
      y_scale: 'linear',
      x_unit: 's',
      y_unit: 'Hz',
    })
    expect(chart.x_ticks.every((tick: unknown) => typeof tick === 'string')).toBe(true)
    expect(chart.y_ticks.every((tick: unknown) => typeof tick === 'number')).toBe(true)
    const [sin, cos] = chart.elements
    expect(sin.label).toBe('sin(x)')
    expect(sin.points).toHaveLength(100)
    expect(new Date(sin.points[0][0])).toEqual(new Date('2023-09-01T00:00:00.000Z'))
    expect(sin.points[25][1]).toBeCloseTo(Math.sin((25 * 2 * Math.PI) / 99), 10)
    expect(cos.label).toBe('cos(x)')
    expect(cos.points[0]).toEqual(['2023-09-01', 1])
  })

  it('pie', async () => {
    const chart = await chartOf(`
fig, ax = plt.subplots(figsize=(8, 8))
ax.pie([90, 10], labels=["No", "No, in blue"], autopct='%1.1f%%', startangle=90)
ax.axis('equal')
plt.title('Will I wake up early tomorrow?')
plt.show()
`)
    expect(chart).toEqual({
      type: 'pie',
      title: 'Will I wake up early tomorrow?',
      elements: [
        { label: 'No', angle: 324, radius: 1 },
        { label: 'No, in blue', angle: 36, radius: 1 },
      ],
    })
  })

  it('scatter', async () => {
    const chart = await chartOf(`
plt.xlabel("A")
plt.ylabel("B")
plt.scatter([1, 2, 3, 4, 5], [5, 4, 3, 2, 1], c='blue', label='Dataset 1')
plt.scatter(np.arange(10) / 10, np.arange(10) / 5, c='red', label='Dataset 2')
plt.show()
`)
    expect(chart).toMatchObject({ type: 'scatter', title: null, x_label: 'A', y_label: 'B' })
    expect(chart.elements[0]).toEqual({
      label: 'Dataset 1',
      points: [
        [1, 5],
        [2, 4],
        [3, 3],
        [4, 2],
        [5, 1],
      ],
    })
    expect(chart.elements[1].label).toBe('Dataset 2')
    expect(chart.elements[1].points).toHaveLength(10)
  })

  it('box and whisker', async () => {
    const chart = await chartOf(`
data = {'Class A': [85, 90, 78, 92, 88], 'Class B': [95, 89, 76, 91, 84, 87], 'Class C': [75, 82, 88, 79, 86]}
fig, ax = plt.subplots(figsize=(10, 6))
ax.set_title('Exam Scores Distribution')
ax.set_xlabel('Class')
ax.set_ylabel('Score')
ax.boxplot(data.values(), labels=data.keys(), patch_artist=True)
plt.tight_layout()
plt.show()
`)
    expect(chart).toMatchObject({
      type: 'box_and_whisker',
      title: 'Exam Scores Distribution',
      x_label: 'Class',
    })
    const boxes = chart.elements
    expect(boxes.map((b: { label: string }) => b.label)).toEqual(['Class A', 'Class B', 'Class C'])
    expect(boxes.map((b: { outliers: number[] }) => b.outliers)).toEqual([[], [76], []])
    expect(boxes.map((b: { min: number }) => b.min)).toEqual([78, 84, 75])
    expect(boxes.map((b: { first_quartile: number }) => b.first_quartile)).toEqual([85, 84.75, 79])
    expect(boxes.map((b: { median: number }) => b.median)).toEqual([88, 88, 82])
    expect(boxes.map((b: { third_quartile: number }) => b.third_quartile)).toEqual([90, 90.5, 86])
    expect(boxes.map((b: { max: number }) => b.max)).toEqual([92, 95, 88])
  })

  it('superchart, for several axes', async () => {
    const chart = await chartOf(`
x1 = np.linspace(0, 10, 100)
fig, axs = plt.subplots(1, 2, figsize=(10, 8))
fig.suptitle('Multiple Charts Example', fontsize=16)
axs[0].plot(x1, np.sin(x1), 'r')
axs[0].set_title('Sine Wave')
axs[0].grid(True)
axs[1].scatter(np.random.rand(5), np.random.rand(5), c='blue', label='Dataset 1')
axs[1].set_xlabel('X')
axs[1].set_ylabel('Y')
axs[1].set_title('Scatter Plot')
axs[1].grid(True)
plt.show()
`)
    expect(chart.type).toBe('superchart')
    expect(chart.title).toBe('Multiple Charts Example')
    const [line, scatter] = chart.elements
    expect(line).toMatchObject({ type: 'line', title: 'Sine Wave', x_label: null, y_label: null })
    expect(line.elements).toHaveLength(1)
    expect(line.elements[0].points).toHaveLength(100)
    expect(scatter).toMatchObject({ type: 'scatter', title: 'Scatter Plot', x_label: 'X', y_label: 'Y' })
    expect(scatter.elements[0].points).toHaveLength(5)
  })

  it('log scale and a categorical axis', async () => {
    const log = await chartOf(`
x = np.linspace(0, 100, 100)
plt.figure(figsize=(10, 6))
plt.plot(x, np.exp(x), label='y = e^x')
plt.yscale('log')
plt.xlabel('X-axis')
plt.ylabel('Y-axis (log scale)')
plt.title('Chart with Log Scale on Y-axis')
plt.legend()
plt.grid(True)
plt.show()
`)
    expect(log).toMatchObject({ type: 'line', y_unit: 'log scale', x_scale: 'linear', y_scale: 'log' })
    expect(log.elements).toHaveLength(1)
    expect(log.elements[0].label).toBe('y = e^x')
    const categorical = await chartOf(
      "plt.figure()\nplt.plot([1, 2, 3, 4, 5], ['A', 'B', 'C', 'D', 'E'])\nplt.show()",
    )
    expect(categorical).toMatchObject({ type: 'line', x_scale: 'linear', y_scale: 'categorical' })
  })

  it('unknown, and none for a blank figure', async () => {
    const chart = await chartOf(`
fig, ax = plt.subplots()
ax.add_artist(plt.Circle((0, 0), 1, color='blue', fill=False))
ax.add_artist(plt.Circle((0, 0), 2, color='red', fill=False))
ax.grid(True)
plt.title('Two Concentric Circles')
plt.show()
`)
    expect(chart).toEqual({ type: 'unknown', title: 'Two Concentric Circles', elements: [] })
    const blank = await sandbox.runCode('fig = plt.figure()\nplt.show()')
    expect(blank.results[0]?.png).toBeDefined()
    expect(blank.results[0]?.chart).toBeUndefined()
  })
})
