/**
 * A request's JSON body, read and checked against a zod schema: a mistake is a 400 that says
 * which field is wrong.
 * @module
 */
import type { Context } from 'hono'
import type { z } from 'zod'
import { InvalidArgumentError } from '../errors.js'

export async function jsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text()
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
