import { describe, expect, it } from 'vitest'
import { Execution, ExecutionError, Result } from './messaging.js'

describe('Result', () => {
  it('maps known MIME types to fields and keeps the rest in extra', () => {
    const result = new Result(
      { 'text/plain': 'x', 'image/png': 'iVBOR', 'analyst/data': { a: [1] }, 'application/vnd.custom': 1 },
      true,
    )
    expect(result.text).toBe('x')
    expect(result.png).toBe('iVBOR')
    expect(result.data).toEqual({ a: [1] })
    expect(result.extra).toEqual({ 'application/vnd.custom': 1 })
    expect(result.formats()).toEqual(['png', 'data', 'application/vnd.custom'])
    expect(result.toJSON()).toEqual({
      isMainResult: true,
      text: 'x',
      png: 'iVBOR',
      data: { a: [1] },
      extra: { 'application/vnd.custom': 1 },
    })
  })
})

describe('Execution', () => {
  it('gives the main result as text and serializes to plain JSON', () => {
    const execution = new Execution(
      [new Result({ 'text/plain': 'shown' }, false), new Result({ 'text/plain': '42' }, true)],
      { stdout: ['a\n'], stderr: [] },
      new ExecutionError('ValueError', 'bad', 'Traceback…'),
      3,
    )
    expect(execution.text).toBe('42')
    const json = JSON.parse(JSON.stringify(execution))
    expect(json.error).toEqual({ name: 'ValueError', value: 'bad', traceback: 'Traceback…' })
    expect(json.results[1]).toEqual({ isMainResult: true, text: '42' })
    expect(json.executionCount).toBe(3)
  })
})
