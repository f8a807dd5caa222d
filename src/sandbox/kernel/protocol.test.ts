import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { parseMessage, readLines } from './protocol.js'

function collect(chunks: Buffer[], maxLineBytes = 1000) {
  const stream = new PassThrough()
  const lines: string[] = []
  let oversized = 0
  readLines(
    stream,
    maxLineBytes,
    (line) => lines.push(line),
    () => oversized++,
  )
  for (const chunk of chunks) stream.write(chunk)
  return { lines, oversized: () => oversized }
}

describe('readLines', () => {
  it('keeps a character that is split across two chunks', () => {
    const bytes = Buffer.from('{"a":"é"}\n')
    const split = bytes.indexOf(0xa9) // the second byte of é
    const { lines } = collect([bytes.subarray(0, split), bytes.subarray(split)])
    expect(lines).toEqual(['{"a":"é"}'])
  })

  it('joins a line split across chunks and splits many lines in one chunk', () => {
    const { lines } = collect([Buffer.from('one\ntw'), Buffer.from('o\nthree\n\nfour')])
    expect(lines).toEqual(['one', 'two', 'three'])
  })

  it('drops a line longer than the limit, then reads on', () => {
    const { lines, oversized } = collect([
      Buffer.from('x'.repeat(600)),
      Buffer.from('y'.repeat(600)),
      Buffer.from('z\nok\n'),
    ])
    expect(lines).toEqual(['ok'])
    expect(oversized()).toBe(1)
  })
})

describe('parseMessage', () => {
  it('accepts the messages of the protocol', () => {
    expect(parseMessage('{"type":"stdout","id":"a","text":"hi"}')).toEqual({
      type: 'stdout',
      id: 'a',
      text: 'hi',
    })
    expect(parseMessage('{"type":"done","id":"a","count":3}')).toEqual({ type: 'done', id: 'a', count: 3 })
  })

  it('rejects what is not a valid message: forged or broken lines cannot reach the host as data', () => {
    for (const line of [
      'not json',
      '{"type":"stdout","id":"a"}',
      '{"type":"nope"}',
      '[1,2]',
      '{"type":"done","id":1,"count":1}',
    ]) {
      expect(parseMessage(line)).toBeUndefined()
    }
  })
})
