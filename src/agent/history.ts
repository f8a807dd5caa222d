/**
 * What goes back to the model: the reply (without the SDK's own answers to calls the loop answers),
 * one result for each tool call under the call's own name, the observations of code from the text
 * as a user message, a vision model's images, and cells run outside the conversation.
 * @module
 */
import type { ModelMessage, ToolResultPart } from 'ai'
import type { Execution } from '../sandbox/index.js'
import type { RefusedFile, Violation } from './events.js'
import { observe, refusedNote } from './observation.js'
import type { Run, ToolCallRef } from './runs.js'
import type { ModelImage, StepOutcome } from './step.js'

/**
 * What the model is told of a run that did not finish (stopped, failed or abandoned): the answer to
 * its tool call, or a note after code from the text.
 */
export const CANCELLED = 'The run was stopped before it finished: its output is not known.'

/**
 * The reply's messages for the history. The AI SDK has already answered an invalid call (a
 * tool-error): the loop answers every call itself, so that answer is dropped, and each call gets
 * exactly one result, as strict providers require.
 */
export function replyMessages(messages: ModelMessage[], runs: Run[]): ModelMessage[] {
  const answered = new Set(runs.flatMap((run) => (run.call ? [run.call.toolCallId] : [])))
  if (answered.size === 0) return messages
  return messages.flatMap((message): ModelMessage[] => {
    if (message.role !== 'tool') return [message]
    const content = message.content.filter(
      (part) => !('toolCallId' in part) || !answered.has(part.toolCallId),
    )
    return content.length > 0 ? [{ ...message, content }] : []
  })
}

function toolResult(call: ToolCallRef, text: string): ToolResultPart {
  return {
    type: 'tool-result',
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    output: { type: 'text', value: text },
  }
}

/** What the model is told of one step, gathered run by run. */
export class StepHistory {
  private readonly results: ToolResultPart[] = []
  private readonly texts: string[] = []
  private readonly images: ModelImage[] = []
  private readonly finished = new Set<Run>()

  /** `runs`: all the step's runs, so that every call is answered even if its run never ends. */
  constructor(private readonly runs: Run[]) {}

  add(run: Run, outcome: StepOutcome) {
    this.finished.add(run)
    if (run.call) this.results.push(toolResult(run.call, outcome.observation))
    // Labelled for what it is: output only where code ran.
    else this.texts.push(outcome.ran ? `Output of your code:\n${outcome.observation}` : outcome.observation)
    this.images.push(...outcome.images)
  }

  /** Adds to what the model is told of a run that was added: a note learned after its observation. */
  note(run: Run, text: string) {
    const call = run.call
    const result = call && this.results.find((part) => part.toolCallId === call.toolCallId)
    if (result?.output.type === 'text')
      result.output = { type: 'text', value: `${result.output.value}\n${text}` }
    else if (!call) this.texts.push(text)
  }

  /** The step's messages: what finished, and for each call that did not, that it was cancelled. */
  messages(): ModelMessage[] {
    const answered = new Set(this.results.map((result) => result.toolCallId))
    const results = [...this.results]
    for (const run of this.runs)
      if (run.call && !answered.has(run.call.toolCallId)) results.push(toolResult(run.call, CANCELLED))
    // Code from the text that did not finish is said too: the kernel may hold part of what it did.
    const unfinished = this.runs.some((run) => run.type === 'cell' && !run.call && !this.finished.has(run))
    const texts = unfinished ? [...this.texts, CANCELLED] : this.texts
    const messages: ModelMessage[] = []
    // Every tool call gets its result (real APIs reject a history without them).
    if (results.length > 0) messages.push({ role: 'tool', content: results })
    if (texts.length > 0) messages.push({ role: 'user', content: texts.join('\n\n') })
    if (this.images.length > 0) {
      messages.push({
        role: 'user',
        content: [
          { type: 'text', text: 'The charts from that step:' },
          ...this.images.map((image) => ({
            type: 'image' as const,
            image: image.data,
            mediaType: image.mediaType,
          })),
        ],
      })
    }
    return messages
  }
}

/** A cell someone else ran in the sandbox (an MCP client, a person), told to the model. */
export function outsideCellMessage(
  code: string,
  execution: Execution | undefined,
  violations: Violation[] = [],
  refused?: RefusedFile[],
  /** Said instead of its output: it did not end. */
  unfinished?: string,
): ModelMessage {
  const ran =
    unfinished ??
    (execution
      ? observe({ execution, imageNames: [], notes: [] })
      : `Nothing ran: the guard stopped it (${violations.map((v) => v.message).join('; ')}).`)
  const note = refusedNote(refused)
  const what = note ? `${ran}\n${note}` : ran
  return {
    role: 'user',
    content: `This code was run in the sandbox outside our conversation:\n\`\`\`python\n${code}\n\`\`\`\n${what}`,
  }
}
