/** The web UI's server-sent events parser: framing in any chunking, comments, CRLF, multi-line data. */
import { describe, expect, it } from 'vitest'
import { readSse, type SseMessage, SseParser } from '../../src/web/sse.js'

function parse(chunks: string[]): SseMessage[] {
  const messages: SseMessage[] = []
  const parser = new SseParser((message) => messages.push(message))
  for (const chunk of chunks) parser.feed(chunk)
  parser.end()
  return messages
}

const STREAM = 'event: code\ndata: {"step":1}\n\n: keep-alive\n\nevent: done\ndata: {"a":\ndata: 2}\n\n'

describe('SseParser', () => {
  it('reads events, skips comments and joins data lines', () => {
    expect(parse([STREAM])).toEqual([
      { event: 'code', data: '{"step":1}', id: undefined },
      { event: 'done', data: '{"a":\n2}', id: undefined },
    ])
  })

  it('gives the same events however the text is split', () => {
    const whole = parse([STREAM])
    for (let size = 1; size < 8; size++) {
      const chunks = STREAM.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g')) ?? []
      expect(parse(chunks)).toEqual(whole)
    }
  })

  it('accepts CRLF and CR line ends, also split between chunks', () => {
    const crlf = STREAM.replace(/\n/g, '\r\n')
    expect(parse([crlf])).toEqual(parse([STREAM]))
    expect(parse(crlf.split(/(?<=\r)/))).toEqual(parse([STREAM]))
    expect(parse([STREAM.replace(/\n/g, '\r')])).toEqual(parse([STREAM]))
  })

  it('defaults the event name, keeps a value without the space, drops an unfinished event', () => {
    expect(parse(['data:x\n\nevent: y\ndata: z'])).toEqual([{ event: 'message', data: 'x', id: undefined }])
  })

  it('decodes a character split across two network chunks', async () => {
    const bytes = new TextEncoder().encode('event: stdout\ndata: {"text":"é"}\n\n')
    const cut = bytes.indexOf(0xc3) + 1
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, cut))
        controller.enqueue(bytes.slice(cut))
        controller.close()
      },
    })
    const messages: SseMessage[] = []
    await readSse(body, (message) => messages.push(message))
    expect(JSON.parse(messages[0]?.data ?? '{}')).toEqual({ text: 'é' })
  })
})
