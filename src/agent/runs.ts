/**
 * A model's reply → what to do with it: the final answer, or the runs of one step (cells, calls of
 * extra tools, and the problems told back to the model when nothing can run). Pure: no model, no
 * sandbox.
 *
 * Tool calls are taken in tools mode; without any, fenced code in the text (either mode).
 * @module
 */
import { extractCode } from './extract.js'
import { type LanguageProfile, languageProfile } from './language.js'
import type { Reply } from './model-call.js'
import { EMPTY_REPLY_NUDGE } from './prompt.js'
import type { AnalystTool } from './tools.js'

/** The tool call a run answers: its result carries the same id and name. */
export interface ToolCallRef {
  toolCallId: string
  toolName: string
}

/** One thing a step does, in the order the model asked for them. */
export type Run =
  /** Python for the kernel: a run_python call, or the fenced blocks of the text. */
  | { type: 'cell'; code: string; call?: ToolCallRef }
  /** A call of an extra tool. */
  | { type: 'tool'; tool: AnalystTool; input: unknown; call: ToolCallRef }
  /** Nothing runs: the model is told why, and what to send instead. */
  | { type: 'problem'; message: string; call?: ToolCallRef }

export type Plan =
  | { type: 'answer'; text: string }
  | {
      type: 'runs'
      runs: Run[]
      /** What the model wrote around its code, for the record. */
      prose?: string
    }

export interface PlanOptions {
  /** The extra tools the model was offered. */
  tools?: AnalystTool[]
  /** The language the model writes. @default Python's */
  language?: LanguageProfile
  /** Code this question ran without an error (trimmed): a reply that only shows it again answers. */
  ranBefore?: ReadonlySet<string>
}

export function planRuns(
  reply: Pick<Reply, 'text' | 'toolCalls' | 'finishReason'>,
  options: PlanOptions = {},
): Plan {
  const language = options.language ?? languageProfile('python')
  if (reply.toolCalls.length > 0) {
    return {
      type: 'runs',
      runs: reply.toolCalls.map((call) => toolCallRun(call, options.tools ?? [], language)),
      prose: reply.text.trim() || undefined,
    }
  }
  const extracted = extractCode(reply.text, language.fences)
  const prose = extracted.prose.trim() || undefined
  const problem = (message: string): Plan => ({ type: 'runs', runs: [{ type: 'problem', message }], prose })
  if (extracted.code) {
    // A final answer that shows code it already ran, for the reader: not a new step.
    if (extracted.prose && options.ranBefore?.has(extracted.code.trim()))
      return { type: 'answer', text: reply.text.trim() }
    return { type: 'runs', runs: [{ type: 'cell', code: extracted.code }], prose }
  }
  if (reply.finishReason === 'length') return problem(CUT_OFF)
  if (extracted.unterminated) return problem(unterminated(language))
  if (extracted.otherLanguages.length > 0)
    return problem(
      `Only ${language.name} runs here, not ${extracted.otherLanguages.join(', ')}. Rewrite the step in ${language.name}${language.language === 'python' ? ' (pandas can do it)' : ''}.`,
    )
  if (reply.text.trim()) return { type: 'answer', text: reply.text.trim() }
  return problem(EMPTY_REPLY_NUDGE)
}

const CUT_OFF =
  'Your reply was cut off (too long) before the code block was closed; nothing ran. Send shorter code: one step at a time.'
const unterminated = (language: LanguageProfile) =>
  `Your code block was not closed with \`\`\`; nothing ran. Send the code again in a complete \`\`\`${language.fence} block.`

function toolCallRun(call: Reply['toolCalls'][number], tools: AnalystTool[], language: LanguageProfile): Run {
  const RUN_PYTHON = language.tool
  const ref = { toolCallId: call.toolCallId, toolName: call.toolName }
  const extra = tools.find((candidate) => candidate.name === call.toolName)
  if (extra) return { type: 'tool', tool: extra, input: call.input, call: ref }
  if (call.toolName !== RUN_PYTHON)
    return {
      type: 'problem',
      message: `There is no tool named ${call.toolName}. Use ${RUN_PYTHON} with a "code" argument.`,
      call: ref,
    }
  const code = (call.input as { code?: unknown } | undefined)?.code
  if (call.invalid || typeof code !== 'string')
    return {
      type: 'problem',
      message: `The ${RUN_PYTHON} call had invalid arguments; nothing ran. Call it with JSON {"code": "<${language.fence} code>"}.`,
      call: ref,
    }
  if (!code.trim()) return { type: 'problem', message: 'The code was empty; nothing ran.', call: ref }
  return { type: 'cell', code, call: ref }
}
