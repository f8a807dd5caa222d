import { describe, expect, it } from 'vitest'
import { Execution, ExecutionError, Result } from '../sandbox/index.js'
import { observe, pngSize, truncateMiddle } from './observation.js'

// A 1×1 PNG.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='

describe('observe', () => {
  it('bounds long output by keeping head and tail with a marker', () => {
    const long = Array.from({ length: 2000 }, (_, i) => `line ${i}`).join('\n')
    const text = observe({ execution: new Execution([], { stdout: [long], stderr: [] }) })
    expect(text.length).toBeLessThan(4200)
    expect(text).toContain('line 0')
    expect(text).toContain('line 1999')
    expect(text).toMatch(/\[\d+ characters omitted\]/)
  })

  it('summarizes a table by rows and columns, an image by size and name, files, and errors', () => {
    const execution = new Execution(
      [
        new Result(
          { 'text/plain': '   a  b\n0  1  2\n\n[1 rows x 2 columns]', 'analyst/data': { a: [1], b: [2] } },
          true,
        ),
        new Result({ 'image/png': PNG, 'text/plain': '<Figure>' }, false),
      ],
      { stdout: [], stderr: [] },
      new ExecutionError('KeyError', "'x'", "Traceback (most recent call last):\nKeyError: 'x'"),
      1,
      [{ name: 'out.csv', path: '/home/user/out.csv', size: 10, mimeType: 'text/csv' }],
    )
    const text = observe({ execution, imageNames: ['step-1-chart-1.png'], notes: ['same error'] })
    expect(text).toContain('a table with 1 rows and columns a, b')
    expect(text).toContain('[image] a chart (PNG 1×1), shown to the user as step-1-chart-1.png')
    expect(text).toContain('out.csv (10 bytes, text/csv)')
    expect(text).toContain("[error] KeyError: 'x'")
    expect(text).toContain('[note] same error')
  })

  it('adds the data behind a chart, for a model that cannot see it', () => {
    const chart = { type: 'pie', title: 'Share', elements: [{ label: 'No', angle: 324, radius: 1 }] }
    const execution = new Execution([new Result({ 'image/png': PNG, 'analyst/chart': chart }, false)])
    expect(observe({ execution })).toBe('[image] a chart (PNG 1×1). Its data: pie chart "Share": No 90%')
  })

  it('says so when the code printed nothing', () => {
    expect(observe({ execution: new Execution() })).toMatch(/without printing anything/)
  })
})

describe('helpers', () => {
  it('truncateMiddle leaves short text alone', () => {
    expect(truncateMiddle('short', 10)).toBe('short')
  })

  it('pngSize reads the header', () => {
    expect(pngSize(PNG)).toEqual({ width: 1, height: 1 })
    expect(pngSize('bm90IGEgcG5n')).toBeUndefined()
  })
})
