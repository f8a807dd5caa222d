import { describe, expect, it } from 'vitest'
import { e2bResult, ndjsonLine } from './interpreter.js'

describe('e2bResult', () => {
  it("names every format as E2B's server does and drops one pair of quotes from a string's text", () => {
    expect(
      e2bResult(
        { 'text/plain': "'/home/user'", 'image/png': 'iVBOR', 'analyst/chart': { type: 'bar' }, 'x/y': 1 },
        false,
      ),
    ).toEqual({
      type: 'result',
      text: '/home/user',
      png: 'iVBOR',
      chart: { type: 'bar' },
      extra: { 'x/y': 1 },
      is_main_result: false,
    })
    expect(e2bResult({ 'text/plain': '"a"' }, true).text).toBe('a')
    expect(e2bResult({ 'text/plain': "'a' + 'b'" }, true).text).toBe("a' + 'b")
    expect(e2bResult({ 'text/plain': "'" }, true).text).toBe("'")
    expect(e2bResult({ 'text/plain': '42', 'analyst/data': { a: [1] } }, true)).toMatchObject({
      text: '42',
      data: { a: [1] },
    })
  })
})

describe('ndjsonLine', () => {
  it('is one line of ASCII that parses back to the message, whatever characters it holds', () => {
    const message = { type: 'stdout', text: 'é ü 漢字 😀\nnext' }
    const line = ndjsonLine(message)
    expect(line.endsWith('\n')).toBe(true)
    expect(line.slice(0, -1)).not.toContain('\n')
    expect([...line].every((char) => char.charCodeAt(0) < 128)).toBe(true)
    expect(JSON.parse(line)).toEqual(message)
  })
})
