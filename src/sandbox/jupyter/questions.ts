/**
 * sql() and describe_table() on the Jupyter engine. ipykernel reads no shell-channel message
 * (comms included) while a cell runs, but it does read the stdin channel: the prelude sends each
 * question as an input_request whose prompt starts with QUESTION_MARKER, bypassing raw_input (so
 * ordinary input() stays as it was, refused: cells run with allow_stdin false), and the host
 * answers with every answer the local kernel protocol would stream, as one JSON list. The
 * sources' checks, timeouts and caps apply as on the other engines (host-questions.ts).
 * @module
 */
import { type Answer, answerQuestion, type RunningCell } from '../host-questions.js'
import type { HostQuestion } from '../kernel/channel.js'
import type { HostRequest } from '../kernel/protocol.js'
import { parseMessage } from '../kernel/protocol.js'
import type { QueryHost } from '../query.js'

/** The start of a prompt that is a question to the host (prelude.py has the same). */
export const QUESTION_MARKER = '\u0001analyst-question:'

/** Answers a marked prompt from the sources; other prompts are not ours (left unanswered). */
export function answerPrompt(
  sources: QueryHost | undefined,
  cell: RunningCell,
  prompt: string,
  reply: (value: string) => void,
): void {
  if (!prompt.startsWith(QUESTION_MARKER)) return
  const question = parseQuestion(prompt.slice(QUESTION_MARKER.length))
  if (!question) {
    reply(
      JSON.stringify([{ type: 'query-error', id: '', name: 'QueryError', message: 'malformed question' }]),
    )
    return
  }
  const answers: HostRequest[] = []
  const collect: Answer = (answer) => answers.push(answer)
  void answerQuestion(sources, question, cell, collect).finally(() => reply(JSON.stringify(answers)))
}

function parseQuestion(text: string): HostQuestion | undefined {
  try {
    const message = parseMessage(text)
    if (message && ['query', 'query-cancel', 'describe-table'].includes(message.type))
      return message as HostQuestion
  } catch {}
  return undefined
}
