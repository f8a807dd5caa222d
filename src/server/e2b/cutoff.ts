/**
 * Streams into a sandbox end as E2B's edge ends them when the sandbox is killed or paused: the
 * connection drops mid-body, with no last line. The SDKs read that, and then /health's 502, as
 * the sandbox's end (a TimeoutError, "killed or reached its end of life"), not as a result.
 * @module
 */

/** `response`, its body cut off (the socket closed) when `signal` aborts; at once if it has. */
export function cutOffWhen(signal: AbortSignal, response: Response): Response {
  const body = response.body
  if (!body) return response
  const reader = body.getReader()
  let ended = false
  let onAbort = () => {}
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      onAbort = () => {
        if (ended) return
        ended = true
        // The code node-server takes for a connection that went away: any other it logs as a crash.
        controller.error(
          Object.assign(new Error('The sandbox ended'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }),
        )
        reader.cancel().catch(() => {})
      }
      if (signal.aborted) onAbort()
      else signal.addEventListener('abort', onAbort, { once: true })
    },
    async pull(controller) {
      try {
        const { done, value } = await reader.read()
        if (ended) return
        if (done) {
          ended = true
          signal.removeEventListener('abort', onAbort)
          controller.close()
        } else controller.enqueue(value)
      } catch (error) {
        if (ended) return
        ended = true
        controller.error(error)
      }
    },
    cancel(reason) {
      ended = true
      signal.removeEventListener('abort', onAbort)
      return reader.cancel(reason)
    },
  })
  return new Response(stream, { status: response.status, headers: response.headers })
}
