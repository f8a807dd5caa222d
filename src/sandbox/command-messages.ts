/**
 * What a kernel says about a shell command it started (src/sandbox/python/analyst_commands.py),
 * whichever kernel it is: Analyst's own over its pipe, a Jupyter kernel as comm messages.
 * @module
 */
import { z } from 'zod'

export const COMMAND_MESSAGES = [
  z.object({ type: z.literal('proc-started'), id: z.string(), pid: z.number().int() }),
  z.object({
    type: z.literal('proc-out'),
    id: z.string(),
    stream: z.enum(['stdout', 'stderr']),
    data: z.string(),
  }),
  z.object({
    type: z.literal('proc-exit'),
    id: z.string(),
    code: z.number().int(),
    error: z.string().optional(),
  }),
] as const

export const CommandMessage = z.discriminatedUnion('type', [...COMMAND_MESSAGES])
export type CommandMessage = z.infer<typeof CommandMessage>
