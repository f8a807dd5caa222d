/**
 * sql() and describe_table() on the Jupyter engine. ipykernel reads no shell-channel message
 * (comms included) while a cell runs, but it does read the stdin channel: the prelude sends each
 * question as an input_request whose prompt starts with QUESTION_MARKER, bypassing raw_input (so
 * ordinary input() stays as it was, refused: cells run with allow_stdin false), and the host
 * answers with the answers the local kernel protocol would stream, as a JSON list.
 *
 * A query's rows come in chunks of at most CHUNK_BYTES: Jupyter Server closes a websocket whose
 * message is over 10 MiB (tornado's websocket_max_message_size), so the kernel asks for more
 * (`query-more`) until the query has ended, and the host reads no further than the chunk it holds
 * (the source waits, not the host's memory). The sources' checks, timeouts and caps apply as on
 * the other engines (host-questions.ts).
 * @module
 */
import { type Answer, answerQuestion, type RunningCell } from '../host-questions.js'
import type { HostQuestion } from '../kernel/channel.js'
import type { HostRequest } from '../kernel/protocol.js'
import { parseMessage } from '../kernel/protocol.js'
import type { QueryHost } from '../query.js'

/** The start of a prompt that is a question to the host (prelude.py has the same). */
export const QUESTION_MARKER = '\u0001analyst-question:'

/** A reply's size: well under Jupyter Server's 10 MiB, after the reply is quoted once more. */
export const CHUNK_BYTES = 2 * 1024 * 1024

type Reply = (value: string) => void
type Question = HostQuestion | { type: 'query-more'; id: string }

/** A reply over this (one row, alone) would pass Jupyter Server's 10 MiB once quoted: refused instead. */
const MAX_REPLY_BYTES = 8 * 1024 * 1024

/** One query's answers not yet sent, and who waits: the kernel for a reply, the source for room. */
class Chunks {
  #parts: string[] = []
  #bytes = 0
  #ended = false
  #released = false
  /** The query was refused midway: what it sends next is dropped. */
  #refused = false
  #reply: Reply | undefined
  #room: (() => void) | undefined

  constructor(reply: Reply) {
    this.#reply = reply
  }

  /** Every answer has been sent. */
  get finished(): boolean {
    return this.#ended && this.#parts.length === 0
  }

  /** Adds an answer; resolves once there is room for more (at once, unless a chunk is full). */
  add = (answer: HostRequest): Promise<void> | undefined => {
    if (this.#released || this.#refused) return undefined
    const text = JSON.stringify(answer)
    if (answer.type === 'query-rows' && text.length > CHUNK_BYTES / 2) {
      // Raw columns come in batches under half a chunk (pg-copy.ts), unless one row alone is larger.
      const parts =
        'values' in answer
          ? splitRows(answer.values, text.length).map((values) => JSON.stringify({ ...answer, values }))
          : [text]
      for (const part of parts) {
        if (part.length > MAX_REPLY_BYTES) this.#refuse(answer.id)
        this.#push(part)
      }
    } else this.#push(text)
    if (answer.type === 'query-end' || answer.type === 'query-error') this.#ended = true
    this.#flush()
    if (this.#bytes < CHUNK_BYTES) return undefined
    return new Promise((resolve) => {
      this.#room = resolve
    })
  }

  /**
   * A row too large to carry: the kernel gets an error that says what to do, and the throw ends
   * the query's reading (host-questions.ts records it as the query's error).
   */
  #refuse(id: string): never {
    const message =
      'A row of this result is over 8 MiB, more than the Jupyter engine carries in one message. Select less of it: leave out or cut the widest column (substr/left) in SQL'
    this.#push(JSON.stringify(queryError(id, message)))
    this.#refused = true
    this.#ended = true
    this.#flush()
    throw new Error(message)
  }

  /** The kernel asks for the next chunk. */
  more(reply: Reply) {
    this.#reply = reply
    this.#flush()
  }

  /** Nobody will ask again (the cell ended or was stopped): the source is let go on. */
  release() {
    this.#released = true
    this.#ended = true
    this.#parts = []
    this.#room?.()
    this.#room = undefined
  }

  #push(text: string) {
    this.#parts.push(text)
    this.#bytes += text.length + 1
  }

  #flush() {
    if (!this.#reply || (this.#bytes < CHUNK_BYTES && !this.#ended)) return
    const reply = this.#reply
    this.#reply = undefined
    // A full chunk goes out alone: the next answers wait for the next ask.
    let count = 0
    let bytes = 0
    while (
      count < this.#parts.length &&
      (count === 0 || bytes + (this.#parts[count]?.length ?? 0) < CHUNK_BYTES)
    )
      bytes += (this.#parts[count++]?.length ?? 0) + 1
    const sent = this.#parts.splice(0, count)
    this.#bytes -= bytes
    reply(`[${sent.join(',')}]`)
    if (this.#bytes < CHUNK_BYTES) {
      this.#room?.()
      this.#room = undefined
    }
  }
}

/** A batch of `bytes` as JSON cut into batches of whole rows, each of about CHUNK_BYTES / 2 at most. */
function splitRows(values: unknown[][], bytes: number): unknown[][][] {
  const rows = values[0]?.length ?? 0
  const parts = Math.ceil(bytes / (CHUNK_BYTES / 2))
  if (parts <= 1 || rows <= 1) return [values]
  const per = Math.max(1, Math.ceil(rows / parts))
  const out: unknown[][][] = []
  for (let start = 0; start < rows; start += per)
    out.push(values.map((column) => column.slice(start, start + per)))
  return out
}

/** The questions of one running cell: each query's chunks still to send, by the kernel's id. */
export class CellQuestions {
  readonly #queries = new Map<string, Chunks>()

  constructor(
    private readonly sources: QueryHost | undefined,
    private readonly cell: RunningCell,
  ) {
    cell.controller.signal.addEventListener('abort', () => this.close(), { once: true })
  }

  /** Answers a marked prompt from the sources; other prompts are not ours (left unanswered). */
  answer(prompt: string, reply: Reply): void {
    if (!prompt.startsWith(QUESTION_MARKER)) return
    const question = parseQuestion(prompt.slice(QUESTION_MARKER.length))
    if (!question) {
      reply(JSON.stringify([queryError('', 'malformed question')]))
      return
    }
    if (question.type === 'query-more') {
      const chunks = this.#queries.get(question.id)
      if (!chunks) reply(JSON.stringify([queryError(question.id, 'this query has ended')]))
      else {
        chunks.more(reply)
        if (chunks.finished) this.#queries.delete(question.id)
      }
      return
    }
    if (question.type === 'query-cancel') this.#drop(question.id)
    if (question.type !== 'query') {
      const answers: HostRequest[] = []
      const collect: Answer = (answer) => {
        answers.push(answer)
      }
      void answerQuestion(this.sources, question, this.cell, collect).finally(() =>
        reply(JSON.stringify(answers)),
      )
      return
    }
    const chunks = new Chunks(reply)
    this.#queries.set(question.id, chunks)
    void answerQuestion(this.sources, question, this.cell, chunks.add).finally(() => {
      if (this.#queries.get(question.id) === chunks && chunks.finished) this.#queries.delete(question.id)
    })
  }

  /** The cell has ended: every query still held is let go, its source no longer waits. */
  close() {
    for (const id of [...this.#queries.keys()]) this.#drop(id)
  }

  #drop(id: string) {
    this.#queries.get(id)?.release()
    this.#queries.delete(id)
  }
}

const queryError = (id: string, message: string): HostRequest => ({
  type: 'query-error',
  id,
  name: 'QueryError',
  message,
})

/** A question of the kernel protocol's, or `query-more`, which only this transport needs. */
function parseQuestion(text: string): Question | undefined {
  try {
    const json = JSON.parse(text) as { type?: unknown; id?: unknown }
    if (json?.type === 'query-more')
      return typeof json.id === 'string' ? { type: 'query-more', id: json.id } : undefined
  } catch {
    return undefined
  }
  const message = parseMessage(text)
  if (message && ['query', 'query-cancel', 'describe-table'].includes(message.type))
    return message as HostQuestion
  return undefined
}
