/**
 * Server-sent events read from a fetch response: the ask stream is a POST with an Authorization
 * header, which EventSource cannot send. Framing as the HTML standard defines it: `event:` and
 * `data:` fields, a blank line ends an event, `:` starts a comment, CR, LF or CRLF end a line.
 * @module
 */

export interface SseMessage {
  /** `message` when the event has no `event:` field. */
  event: string
  data: string
  id?: string
}

/** Feeds text in any chunking; calls `onMessage` for each complete event. */
export class SseParser {
  private buffer = ''
  private event = ''
  private data: string[] = []
  private id: string | undefined
  /** A chunk ended in CR: a LF at the start of the next one belongs to the same line end. */
  private pendingCr = false

  constructor(private readonly onMessage: (message: SseMessage) => void) {}

  feed(chunk: string): void {
    if (this.pendingCr && chunk.startsWith('\n')) chunk = chunk.slice(1)
    this.pendingCr = false
    this.buffer += chunk
    let start = 0
    for (;;) {
      const match = /\r\n|\r|\n/g
      match.lastIndex = start
      const found = match.exec(this.buffer)
      if (!found) break
      // A CR at the very end may be the first half of a CRLF split across chunks.
      if (found[0] === '\r' && found.index === this.buffer.length - 1) {
        this.pendingCr = true
      }
      this.line(this.buffer.slice(start, found.index))
      start = found.index + found[0].length
    }
    this.buffer = this.buffer.slice(start)
  }

  /** The stream ended: an event without its closing blank line is dropped, as the standard says. */
  end(): void {
    this.buffer = ''
    this.data = []
    this.event = ''
  }

  private line(line: string) {
    if (line === '') {
      if (this.data.length > 0) {
        this.onMessage({ event: this.event || 'message', data: this.data.join('\n'), id: this.id })
      }
      this.data = []
      this.event = ''
      return
    }
    if (line.startsWith(':')) return
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'event') this.event = value
    else if (field === 'data') this.data.push(value)
    else if (field === 'id' && !value.includes('\0')) this.id = value
  }
}

/** Reads a response body as server-sent events until it ends (or `signal` aborts it). */
export async function readSse(
  body: ReadableStream<Uint8Array>,
  onMessage: (message: SseMessage) => void,
): Promise<void> {
  const parser = new SseParser(onMessage)
  // One decoder for the whole stream: a character split across two chunks stays whole.
  const decoder = new TextDecoder()
  const reader = body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      parser.feed(decoder.decode(value, { stream: true }))
    }
    parser.feed(decoder.decode())
    parser.end()
  } finally {
    reader.releaseLock()
  }
}
