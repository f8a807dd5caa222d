/**
 * A grid's request (a page of rows, column statistics) as the server answers it: JSON at once
 * while the session's kernel is free; while it starts (its cells replayed), or a cell (started on
 * this page, in another tab, by an MCP client) or a download holds it, an event stream that says
 * why first (`waiting`) and brings the answer (`answer`) or why there is none (`failed`) when the
 * wait has ended. Each request names this
 * page, so that the server's one waiting request per grid is one per grid and tab
 * (server/frames.ts): two tabs on one table keep theirs.
 * @module
 */
import { ApiError, send } from './api.js'
import { readSse } from './sse.js'

/** This page's name for the server: random, and not `crypto.randomUUID`, which plain http lacks. */
const CLIENT = Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) =>
  b.toString(16).padStart(2, '0'),
).join('')

export interface GridAnswer<T> {
  value: T
  /** It waited for a running cell (which has ended since). */
  waited: boolean
}

/** What the server says a request waits for: the kernel starting (its cells replayed), a cell, a download. */
export interface Wait {
  reason: 'starting' | 'cell' | 'download'
  message: string
}

/**
 * The answer to `path`; `onWaiting` is called each time the server says what it waits for, with
 * null once nothing holds the kernel (the server's `answering`: the answer is on its way).
 */
export async function gridRequest<T>(
  path: string,
  options: { signal: AbortSignal; onWaiting: (wait: Wait | null) => void },
): Promise<GridAnswer<T>> {
  // The server keeps one request per grid and page, the last to reach it, and answers the one it
  // replaces with a 409. This page aborts its older request before it sends a newer one, but on a
  // busy server the older one can still get there last and replace the newer (seen after a Stop,
  // which moves the grid twice in a few ms): a request the page still waits on asks again.
  for (let replaced = 0; ; replaced++) {
    try {
      return await askOnce<T>(path, options)
    } catch (error) {
      const again = error instanceof ApiError && error.status === 409 && !options.signal.aborted
      if (!again || replaced === 3) throw error
    }
  }
}

async function askOnce<T>(
  path: string,
  options: { signal: AbortSignal; onWaiting: (wait: Wait | null) => void },
): Promise<GridAnswer<T>> {
  const response = await send(path, {
    signal: options.signal,
    headers: { Accept: 'application/json, text/event-stream', 'Analyst-Client': CLIENT },
  })
  if (!response.headers.get('content-type')?.startsWith('text/event-stream'))
    return { value: (await response.json()) as T, waited: false }
  if (!response.body) throw new ApiError('The server sent no stream', response.status)
  let answer: { value: T } | undefined
  let failure: ApiError | undefined
  await readSse(response.body, (message) => {
    const data = JSON.parse(message.data) as { status?: number; message?: string; hint?: string }
    if (message.event === 'waiting')
      options.onWaiting((data as { reason?: string }).reason === 'answering' ? null : (data as Wait))
    else if (message.event === 'answer') answer = { value: data as T }
    else if (message.event === 'failed')
      failure = new ApiError(data.message ?? 'The table could not be read', data.status ?? 500, data.hint)
  })
  if (failure) throw failure
  if (!answer) throw new ApiError('The server stopped before it answered', response.status)
  return { value: answer.value, waited: true }
}
