/**
 * A request's body, read up to a limit (past it a 413, without reading the rest), and a JSON body
 * checked against a zod schema: a mistake is a 400 that says which field is wrong.
 * @module
 */
import type { Context } from 'hono'
import type { z } from 'zod'
import { InvalidArgumentError, TooLargeError } from '../errors.js'

/** The most a JSON body may hold: a question, a cell or a setting is far smaller. */
export const MAX_JSON_BYTES = 4 * 1024 ** 2

/** The request body, up to `maxBytes`; past that a 413, without reading the rest. */
export async function readBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const tooLarge = () =>
    new TooLargeError(`The body is larger than ${maxBytes} bytes`, { hint: 'Send a smaller body.' })
  const length = request.headers.get('content-length')
  if (Number(length ?? 0) > maxBytes) throw tooLarge()
  // A body of a known length within the limit is read whole, as @hono/node-server reads it
  // straight from Node's request. Its .body is a web stream over that request (Readable.toWeb),
  // which left about 19 kB per request behind on the heap (the soak's heap check: about 75 kB per
  // session); only a body of unknown length (chunked) is read through it, to stop at the limit.
  if (length !== null) return new Uint8Array(await request.arrayBuffer())
  const reader = request.body?.getReader()
  if (!reader) return new Uint8Array()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.length
    if (total > maxBytes) {
      await reader.cancel()
      throw tooLarge()
    }
    chunks.push(value)
  }
  return new Uint8Array(Buffer.concat(chunks))
}

/** The request body as text, up to `maxBytes`. */
export async function readText(request: Request, maxBytes = MAX_JSON_BYTES): Promise<string> {
  return new TextDecoder().decode(await readBody(request, maxBytes))
}

export async function jsonBody(c: Context, maxBytes = MAX_JSON_BYTES): Promise<unknown> {
  const text = await readText(c.req.raw, maxBytes)
  if (!text.trim()) return {}
  try {
    return JSON.parse(text)
  } catch {
    throw new InvalidArgumentError('The body is not valid JSON', {
      hint: 'Send a JSON object with Content-Type: application/json.',
    })
  }
}

export function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue?.path.length ? `${issue.path.join('.')}: ` : ''
    throw new InvalidArgumentError(`Invalid request: ${where}${issue?.message ?? 'bad body'}`)
  }
  return parsed.data
}
