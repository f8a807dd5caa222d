/**
 * An error's words in HTTP's status line too (`503 The server's sandboxes use …`), for clients
 * that show only that line: E2B's code-interpreter SDK turns an answer of /execute other than 404
 * and 502 into `SandboxError("503 Service Unavailable")`, without its body. A response carries
 * the phrase as its `statusText`; @hono/node-server does not pass that on to Node, so the
 * middleware does, for answers of 500 and up (reading statusText costs a response its fast path,
 * which an error can spare).
 * @module
 */
import type { ServerResponse } from 'node:http'
import type { MiddlewareHandler } from 'hono'

/** Long enough for a message and its hint; a status line has no limit of its own. */
const MAX_CHARS = 400

/** `text` as a status line may carry it: one line of printable ASCII. */
export function reasonPhrase(text: string): string {
  const line = text
    .replace(/[‘’]/g, "'")
    .replace(/[“”]/g, '"')
    .normalize('NFKD') // … becomes ..., é becomes e and a mark (dropped below)
    .replace(/\s+/g, ' ')
    .replace(/[^\x20-\x7e]/g, '')
    .trim()
  return line.length > MAX_CHARS ? `${line.slice(0, MAX_CHARS - 3)}...` : line
}

/** `response`, with `text` as its reason phrase. */
export function withReason(response: Response, text: string): Response {
  const statusText = reasonPhrase(text)
  if (!statusText) return response
  return new Response(response.body, { status: response.status, statusText, headers: response.headers })
}

/** Writes an error answer's reason phrase into Node's status line (where the server is Node's). */
export const reasonPhrases: MiddlewareHandler = async (c, next) => {
  await next()
  if (c.res.status < 500) return
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing
  const phrase = c.res.statusText
  if (outgoing && phrase && !outgoing.headersSent) outgoing.statusMessage = phrase
}
