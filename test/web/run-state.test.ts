/** The web UI's view of a run: built event by event from the ask stream, or from a stored run. */
import { describe, expect, it } from 'vitest'
import type { RunView } from '../../src/server/types.js'
import type { StreamEvent } from '../../src/web/api.js'
import {
  applyEvent,
  endRun,
  errorNote,
  fromStored,
  mergeLive,
  newRun,
  proseOf,
  type UiRun,
} from '../../src/web/run-state.js'

const usage = { inputTokens: 1, outputTokens: 2, totalTokens: 3 }

function play(events: unknown[]): UiRun {
  return events.reduce<UiRun>((run, event) => applyEvent(run, event as StreamEvent, 's 1'), newRun('Why?'))
}

describe('applyEvent', () => {
  it('turns the stream into steps with prose, output, tables, images and files, then the answer', () => {
    const run = play([
      { type: 'run-start', runId: 'r1', queued: false },
      { type: 'step-start', step: 1, maxSteps: 8 },
      { type: 'model-text-delta', step: 1, delta: 'Plotting ' },
      { type: 'model-text-delta', step: 1, delta: 'it.\n\n```python\nx = 1\n```' },
      { type: 'code', step: 1, code: 'x = 1', source: 'text' },
      { type: 'stdout', step: 1, text: 'a\n' },
      { type: 'stdout', step: 1, text: 'b\n' },
      { type: 'result', step: 1, result: { isMainResult: false, png: 'iVBOR', text: '<Figure>' } },
      {
        type: 'result',
        step: 1,
        result: { isMainResult: true, text: 'df', html: '<script>x</script>', data: { a: [1, 2] } },
      },
      { type: 'result', step: 1, result: { isMainResult: true, html: '<b>only html</b>' } },
      {
        type: 'artifact',
        step: 1,
        artifact: { name: 'out/my chart.png', path: '/x', size: 5, mimeType: 'image/png' },
      },
      { type: 'observation', step: 1, text: 'ok' },
      { type: 'step-start', step: 2, maxSteps: 8 },
      { type: 'model-text-delta', step: 2, delta: 'It is 42.' },
      { type: 'answer', text: 'It is 42.', incomplete: false, unsupportedNumbers: ['42'] },
      {
        type: 'done',
        result: {
          answer: 'It is 42.',
          incomplete: false,
          steps: [{ step: 1, code: 'x = 1', artifacts: [], durationMs: 1234 }],
          artifacts: [],
          unsupportedNumbers: ['42'],
          usage,
          sessionId: 's 1',
          model: 'm',
        },
      },
    ])
    expect(run.id).toBe('r1')
    expect(run.status).toBe('done')
    expect(run.answer).toBe('It is 42.')
    expect(run.unsupportedNumbers).toEqual(['42'])
    expect(run.draft).toBe('')
    expect(run.totalTokens).toBe(3)
    const [step] = run.steps
    expect(step).toMatchObject({
      step: 1,
      prose: 'Plotting it.',
      stdout: 'a\nb\n',
      running: false,
      durationMs: 1234,
    })
    expect(step?.results[0]?.image).toEqual({
      src: 'data:image/png;base64,iVBOR',
      api: false,
      alt: 'Chart from step 1',
    })
    expect(step?.results[1]).toEqual({
      isMainResult: true,
      text: 'df',
      data: { a: [1, 2] },
      image: undefined,
    })
    // HTML from the sandbox is never kept.
    expect(JSON.stringify(run)).not.toContain('<script>')
    expect(JSON.stringify(run)).not.toContain('only html')
    expect(step?.artifacts[0]?.url).toBe('/api/sessions/s%201/artifacts/out/my%20chart.png')
  })

  it('keeps the follow-ups that come with the answer, live and stored', () => {
    const followUps = ['By month?', 'Which region?']
    const live = play([
      { type: 'run-start', runId: 'r1', queued: false },
      { type: 'answer', text: 'It is 42.', incomplete: false, unsupportedNumbers: [], followUps },
    ])
    expect([live.answer, live.followUps]).toEqual(['It is 42.', followUps])
    const stored = fromStored({
      id: 'r1',
      question: 'Why?',
      answer: 'It is 42.',
      followUps,
      incomplete: false,
      unsupportedNumbers: [],
      status: 'done',
      startedAt: '2026-12-06T00:00:00Z',
      usage,
      steps: [],
    })
    expect(stored.followUps).toEqual(followUps)
  })

  it('marks a blocked step, an error, and a failed run', () => {
    const run = play([
      { type: 'step-start', step: 1, maxSteps: 8 },
      { type: 'code', step: 1, code: 'import os', source: 'tool' },
      { type: 'guard', step: 1, violations: [{ rule: 'os', line: 1, column: 1, message: 'no' }] },
      { type: 'step-start', step: 2, maxSteps: 8 },
      { type: 'code', step: 2, code: '1/0', source: 'tool' },
      {
        type: 'error',
        step: 2,
        error: { name: 'ZeroDivisionError', value: 'division by zero', traceback: 'tb' },
      },
      { type: 'failed', message: 'The model went away', hint: 'Try again.' },
    ])
    expect(run.steps[0]?.violations).toHaveLength(1)
    expect(run.steps[1]?.error?.name).toBe('ZeroDivisionError')
    expect(run.steps.every((step) => !step.running)).toBe(true)
    expect(run).toMatchObject({ status: 'failed', error: 'The model went away', hint: 'Try again.' })
  })

  it('keeps an SVG as an image, never inline', () => {
    const run = play([
      { type: 'code', step: 1, code: 'x', source: 'tool' },
      { type: 'result', step: 1, result: { isMainResult: false, svg: '<svg onload="x()"/>' } },
    ])
    expect(run.steps[0]?.results[0]?.image?.src).toMatch(/^data:image\/svg\+xml;charset=utf-8,%3Csvg/)
  })

  it('keeps the data behind a chart when it has a drawable shape, and drops it otherwise', () => {
    const chart = { type: 'bar', title: 'T', elements: [{ label: 'a', group: 'g', value: 3 }] }
    const run = play([
      { type: 'code', step: 1, code: 'x', source: 'tool' },
      { type: 'result', step: 1, result: { isMainResult: false, png: 'iVBOR', chart } as never },
      {
        type: 'result',
        step: 1,
        result: {
          isMainResult: false,
          png: 'iVBOR',
          chart: { type: 'bar', elements: [{ value: '<b>' }] },
        } as never,
      },
    ])
    expect(run.steps[0]?.results[0]?.chart).toEqual(chart)
    expect(run.steps[0]?.results[1]?.chart).toBeUndefined()
    const stored = fromStored({
      id: 'r',
      question: 'q',
      incomplete: false,
      unsupportedNumbers: [],
      status: 'done',
      startedAt: '',
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      steps: [
        {
          step: 1,
          code: 'x',
          stdout: '',
          stderr: '',
          results: [{ isMainResult: false, chart }],
          artifacts: [],
          durationMs: 1,
        },
      ],
    })
    expect(stored.steps[0]?.results[0]?.chart).toEqual(chart)
  })

  it("drops a file the server's disk could not keep, and shows why in the step's stderr", () => {
    const big = { name: 'big.bin', path: '/x', size: 3, mimeType: 'application/octet-stream' }
    const small = { name: 'small.csv', path: '/y', size: 1, mimeType: 'text/csv' }
    const notKept = "[not kept: big.bin: the server's disk is full]\n"
    const run = play([
      { type: 'step-start', step: 1, maxSteps: 8 },
      { type: 'code', step: 1, code: 'x = 1', source: 'tool' },
      { type: 'stderr', step: 1, text: 'warn\n' },
      { type: 'artifact', step: 1, artifact: big },
      { type: 'artifact', step: 1, artifact: small },
      { type: 'observation', step: 1, text: 'ok' },
      {
        type: 'step-end',
        step: 1,
        record: {
          step: 1,
          code: 'x = 1',
          artifacts: [small],
          refused: [{ name: 'big.bin', reason: "the server's disk is full" }],
          execution: {
            results: [],
            logs: { stdout: [], stderr: ['warn\n', notKept] },
            artifacts: [big, small],
          },
          durationMs: 5,
        },
      },
    ])
    expect(run.steps[0]?.artifacts.map((artifact) => artifact.name)).toEqual(['small.csv'])
    expect(run.steps[0]?.stderr).toBe(`warn\n${notKept}`)
  })

  it('ends an unfinished run as interrupted', () => {
    const run = endRun(play([{ type: 'code', step: 1, code: 'x', source: 'tool' }]), 'closed')
    expect(run).toMatchObject({ status: 'interrupted', error: 'closed' })
    expect(run.steps[0]?.running).toBe(false)
  })
})

describe('stored runs', () => {
  const stored: RunView = {
    id: 'r1',
    question: 'Why?',
    answer: 'Because.',
    incomplete: false,
    unsupportedNumbers: [],
    status: 'done',
    startedAt: '2024-01-01T00:00:00Z',
    usage,
    steps: [
      {
        step: 1,
        code: 'x',
        text: 'Plotting the totals.',
        stdout: '',
        stderr: '',
        results: [
          {
            isMainResult: false,
            image: {
              name: 'step-1-chart-1.png',
              size: 9,
              mimeType: 'image/png',
              url: '/api/sessions/s/artifacts/c.png',
            },
          },
          { isMainResult: true, data: 'not a table' as unknown as Record<string, unknown[]> },
        ],
        artifacts: [],
        durationMs: 5,
      },
    ],
  }

  it('shows stored images through the API and drops data that is not a table', () => {
    const run = fromStored(stored)
    expect(run.steps[0]?.results[0]?.image).toEqual({
      src: '/api/sessions/s/artifacts/c.png',
      api: true,
      alt: 'step-1-chart-1.png',
    })
    expect(run.steps[0]?.results[1]?.data).toBeUndefined()
    expect(run.steps[0]?.prose).toBe('Plotting the totals.')
  })

  it('keeps the prose the live run saw when the stored step has none (older records)', () => {
    const older = { ...stored, steps: stored.steps.map(({ text: _, ...step }) => step) }
    const live = {
      ...newRun('Why?'),
      id: 'r1',
      steps: [{ ...fromStored(older).steps[0], prose: 'Hm.' }],
    } as UiRun
    expect(mergeLive(fromStored(older), live).steps[0]?.prose).toBe('Hm.')
    expect(mergeLive(fromStored(older), { ...live, id: 'other' }).steps[0]?.prose).toBeUndefined()
    expect(mergeLive(fromStored(stored), live).steps[0]?.prose).toBe('Plotting the totals.')
  })

  it('keeps a run this page stopped as the page saw it: why, and the step that was running (the store keeps no step that did not end)', () => {
    const live = endRun(
      play([
        { type: 'run-start', runId: 'r1', queued: false },
        { type: 'code', step: 1, code: 'x', source: 'tool' },
        { type: 'step-end', step: 1, record: { ...stored.steps[0], success: true }, durationMs: 5 },
        { type: 'code', step: 2, code: 'slow()', source: 'tool' },
        { type: 'stdout', step: 2, text: 'half way\n' },
      ]),
      'Stopped.',
    )
    expect(live.steps[1]).toMatchObject({ running: false, stopped: true })
    const interrupted = fromStored({ ...stored, status: 'interrupted', error: 'the client disconnected' })
    const merged = mergeLive(interrupted, live)
    expect(merged.error).toBe('Stopped.')
    expect(merged.steps.map((step) => [step.step, step.code, step.stopped])).toEqual([
      [1, 'x', undefined],
      [2, 'slow()', true],
    ])
    expect(merged.steps[1]?.stdout).toBe('half way\n')
    // A run that ended otherwise is the store's alone.
    expect(mergeLive(fromStored(stored), live).steps).toHaveLength(1)
  })
})

describe('errorNote', () => {
  it("says what a traceback leaves out (a MemoryError's limit) and what fixes it", () => {
    const value = 'the cell needed more memory than this sandbox may use (its memory limit, 768 MiB)'
    expect(errorNote({ name: 'MemoryError', value, traceback: 'Traceback …\nMemoryError' })).toBe(
      `MemoryError: ${value} Raise the sandbox's memory limit (memoryMB, or the server's ANALYST_SANDBOX_MEMORY).`,
    )
    expect(
      errorNote({
        name: 'NameError',
        value: "name 'x' is not defined",
        traceback: "NameError: name 'x' is not defined",
      }),
    ).toBeUndefined()
  })
})

describe('proseOf', () => {
  it('takes fenced code out of a text-mode reply', () => {
    expect(proseOf('First.\n\n```python\nx = 1\n```\n\nThen.')).toBe('First.\n\nThen.')
    expect(proseOf('Still streaming ```python\nx =')).toBe('Still streaming')
  })
})
