import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import type { BlobStore, HistoryStep, SessionHistory, StoredArtifact } from '../types.js'
import { VEGA_LITE_MIME } from './chart-spec.js'
import { exportSession } from './index.js'

const history: SessionHistory = {
  session: {
    id: 's1',
    title: 'Orders',
    owner: null,
    status: 'idle',
    createdAt: '2026-12-04T00:00:00Z',
    updatedAt: '2026-12-04T00:00:00Z',
    questions: 0,
  } as SessionHistory['session'],
  datasets: [],
  runs: [],
  blocked: [],
}
const blobs = { get: async () => undefined } as unknown as BlobStore

describe('exports of an R session', () => {
  it("carry IRkernel's kernelspec in a notebook, and are refused as a Python script", async () => {
    const notebook = JSON.parse(await exportSession(history, 'ipynb', blobs, 'r'))
    expect(notebook.metadata.kernelspec).toEqual({ name: 'ir', display_name: 'R', language: 'R' })
    expect(notebook.metadata.language_info.name).toBe('R')
    const python = JSON.parse(await exportSession(history, 'ipynb', blobs))
    expect(python.metadata.kernelspec.name).toBe('python3')
    await expect(exportSession(history, 'py', blobs, 'r')).rejects.toThrow(
      /does not export as a Python script/,
    )
  })
})

describe("a person's chart edit", () => {
  it('is the chart the notebook and the HTML report carry', async () => {
    const chart = {
      type: 'bar',
      title: 'Revenue',
      x_label: 'region',
      y_label: 'revenue',
      x_unit: null,
      y_unit: null,
      x_scale: 'categorical',
      orientation: 'vertical',
      elements: [
        { label: 'East', group: 'revenue', value: 5, start: -0.4, end: 0.4, bottom: 0 },
        { label: 'West', group: 'revenue', value: 7, start: 0.6, end: 1.4, bottom: 0 },
      ],
    }
    const png = { sha256: 'png', name: 'step-1-chart-1.png' } as StoredArtifact
    const step = {
      step: 1,
      code: 'sales.plot.bar()',
      stdout: '',
      stderr: '',
      files: [],
      durationMs: 1,
      results: [
        {
          isMainResult: false,
          image: png,
          chart,
          chartEdit: { mark: 'line', title: 'Revenue, as a line', yTitle: '' },
        },
      ],
    } as unknown as HistoryStep
    const run = { id: 'r1', question: 'Revenue?', steps: [step], unsupportedNumbers: [] }
    const edited = { ...history, runs: [run] } as unknown as SessionHistory
    const withPng = {
      get: async () => Readable.from([Buffer.from('\x89PNG\r\n\x1a\n')]),
    } as unknown as BlobStore
    const notebook = JSON.parse(await exportSession(edited, 'ipynb', withPng))
    const output = notebook.cells.flatMap((cell: { outputs?: object[] }) => cell.outputs ?? [])[0]
    const spec = output.data[VEGA_LITE_MIME]
    expect(spec.title).toBe('Revenue, as a line')
    expect(spec.layer[0].mark.type).toBe('line')
    expect(spec.layer[0].encoding.y.title).toBeNull()
    const html = await exportSession(edited, 'html', withPng)
    const block = /<script type="[^"]+" class="chart-spec">([^<]*)<\/script>/.exec(html)?.[1] as string
    expect(JSON.parse(block)).toEqual(spec)
  })
})

describe('a step stopped before it ended', () => {
  it('shows in the notebook and the report as stopped, after its output so far, and is left out of the script', async () => {
    const stopped = {
      step: 1,
      code: 'import time\nprint("counting")\ntime.sleep(600)',
      stdout: 'counting\n',
      stderr: '',
      files: [],
      durationMs: 1,
      results: [],
      stopped: 'Stopped.',
    } as unknown as HistoryStep
    const run = { id: 'r1', question: 'Take a while', steps: [stopped], unsupportedNumbers: [] }
    const withStop = { ...history, runs: [run] } as unknown as SessionHistory
    const notebook = JSON.parse(await exportSession(withStop, 'ipynb', blobs))
    const cell = notebook.cells.find((c: { cell_type: string }) => c.cell_type === 'code')
    expect(cell.outputs).toEqual([
      { output_type: 'stream', name: 'stdout', text: ['counting\n'] },
      { output_type: 'error', ename: 'KeyboardInterrupt', evalue: 'Stopped.', traceback: [] },
    ])
    expect(await exportSession(withStop, 'html', blobs)).toContain(
      '<pre class="err">Stopped before it finished: Stopped.</pre>',
    )
    expect(await exportSession(withStop, 'py', blobs)).not.toContain('time.sleep(600)')
  })
})
