/**
 * The kernel's wire protocol, read defensively: user code runs in the kernel's process and can
 * write anything to the message pipe, so every line is size-capped and validated.
 * @module
 */
import type { Readable } from 'node:stream'
import { z } from 'zod'
import type { Language } from '../backend.js'
import { COMMAND_MESSAGES } from '../command-messages.js'
import type { ColumnLayout, QueryColumn } from '../query.js'

const cellId = z.string()

export const KernelMessage = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('ready'),
    pid: z.number(),
    python: z.string(),
    /** A forked kernel's start, phase by phase: [phase, CLOCK_MONOTONIC ns, its process's minor faults so far]. */
    trace: z.array(z.tuple([z.string(), z.number(), z.number()])).optional(),
    /** The pages a forked kernel wrote before ready, when the host asked (zygote.ts' prefault): hex. */
    writes: z
      .string()
      .max(1 << 16)
      .regex(/^[0-9a-f]*$/)
      .optional(),
  }),
  z.object({ type: z.literal('stdout'), id: cellId, text: z.string() }),
  z.object({ type: z.literal('stderr'), id: cellId, text: z.string() }),
  z.object({ type: z.literal('truncated'), id: cellId }),
  z.object({
    type: z.literal('result'),
    id: cellId,
    main: z.boolean(),
    bundle: z.record(z.string(), z.unknown()),
  }),
  z.object({
    type: z.literal('error'),
    id: cellId,
    name: z.string(),
    value: z.string(),
    traceback: z.string(),
  }),
  z.object({ type: z.literal('done'), id: cellId, count: z.number().nullable() }),
  // error: the context's language cannot run in this sandbox (its program is not installed).
  z.object({ type: z.literal('context-created'), id: z.string(), error: z.string().nullish() }),
  z.object({ type: z.literal('env-set'), id: z.string().nullish() }),
  // sql() in a cell: a query for the host's sources, and its cancellation (the cell was interrupted).
  z.object({
    type: z.literal('query'),
    id: z.string(),
    query: z.string(),
    source: z.string().nullish(),
    params: z.union([z.array(z.unknown()), z.record(z.string(), z.unknown())]).nullish(),
    /** How the rows should come: raw columns (the Python kernel's default) or JSON values (R's). */
    format: z.enum(['columns', 'values']).nullish(),
  }),
  z.object({ type: z.literal('query-cancel'), id: z.string() }),
  z.object({
    type: z.literal('describe-table'),
    id: z.string(),
    table: z.string(),
    source: z.string().nullish(),
  }),
  ...COMMAND_MESSAGES,
])
export type KernelMessage = z.infer<typeof KernelMessage>

export type HostRequest =
  | { type: 'execute'; id: string; code: string; context?: string; envs?: Record<string, string> }
  | { type: 'interrupt'; id: string }
  | { type: 'context'; id: string; cwd?: string; language?: Language }
  | { type: 'context-remove'; id: string }
  | { type: 'env'; id: string; envs: Record<string, string> }
  | {
      type: 'spawn'
      id: string
      cmd: string
      cwd?: string
      envs?: Record<string, string>
      stdin: boolean
      /** In a pseudo-terminal of this size. */
      pty?: { cols: number; rows: number }
    }
  | { type: 'proc-resize'; id: string; cols: number; rows: number }
  | { type: 'proc-stdin'; id: string; data: string }
  | { type: 'proc-close-stdin'; id: string }
  | { type: 'proc-signal'; id: string; signal: 'SIGTERM' | 'SIGKILL' | 'SIGINT' }
  // The answer to a query, in order: its columns, batches of rows, then its end or an error.
  | { type: 'query-columns'; id: string; columns: QueryColumn[]; source: string }
  | { type: 'query-rows'; id: string; values: unknown[][] }
  | { type: 'query-rows'; id: string; rows: number; columns: WireColumn[] }
  | { type: 'query-end'; id: string; rows: number; truncated?: string }
  | { type: 'query-error'; id: string; name: string; message: string }
  | { type: 'table-description'; id: string; text?: string; error?: string }

/** A QueryColumnsBatch's column on the wire: its bytes in base64 (uint32 little-endian for ends). */
export interface WireColumn {
  layout: ColumnLayout
  data: string
  nulls?: string
  ends?: string
}

/**
 * Splits a byte stream into lines. One decoder with `stream: true`, so a character split across
 * chunks survives; a line longer than `maxLineBytes` is dropped (reported through onOversized)
 * instead of growing the host's memory.
 */
export function readLines(
  stream: Readable,
  maxLineBytes: number,
  onLine: (line: string) => void,
  onOversized: () => void,
) {
  const decoder = new TextDecoder()
  let pending = ''
  let skipping = false
  stream.on('data', (chunk: Buffer) => {
    let text = decoder.decode(chunk, { stream: true })
    for (;;) {
      const newline = text.indexOf('\n')
      if (newline < 0) break
      const line = text.slice(0, newline)
      text = text.slice(newline + 1)
      if (skipping) {
        skipping = false
        pending = ''
        continue
      }
      const whole = pending + line
      pending = ''
      if (whole) onLine(whole)
    }
    if (skipping) return
    pending += text
    if (pending.length > maxLineBytes) {
      pending = ''
      skipping = true
      onOversized()
    }
  })
}

export function parseMessage(line: string): KernelMessage | undefined {
  try {
    const parsed = KernelMessage.safeParse(JSON.parse(line))
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}
