/** Reads a server-sent events response into { event, data } objects. */
export interface SseEvent {
  event: string
  data: Record<string, unknown> & { type?: string }
}

export async function* readSse(response: Response): AsyncGenerator<SseEvent> {
  if (!response.body) return
  const decoder = new TextDecoder()
  let buffer = ''
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true })
    let end = buffer.indexOf('\n\n')
    while (end >= 0) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      let event = 'message'
      const data: string[] = []
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim()
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
      }
      if (data.length > 0) yield { event, data: JSON.parse(data.join('\n')) }
      end = buffer.indexOf('\n\n')
    }
  }
}

/** POSTs a question and collects every event until the stream ends. */
export async function askOverSse(
  base: string,
  sessionId: string,
  question: string,
  headers: Record<string, string> = {},
  onEvent?: (event: SseEvent) => void,
  signal?: AbortSignal,
): Promise<SseEvent[]> {
  const response = await fetch(`${base}/api/sessions/${sessionId}/ask`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ question }),
    signal,
  })
  if (!response.ok) throw new Error(`ask failed: ${response.status} ${await response.text()}`)
  const events: SseEvent[] = []
  for await (const event of readSse(response)) {
    events.push(event)
    onEvent?.(event)
  }
  return events
}
