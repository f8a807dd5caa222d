/**
 * Recorded replies for an eval, instead of a model: `analyst eval DIR --replay FILE` (hidden, like
 * `ask --replay`), for tests, benchmarks of the harness and runs over known solutions. The file
 * maps question ids to the replies of that question, in order (`"*"`: any other question):
 *
 * ```json
 * { "0": [{ "code": "import pandas as pd\n…" }, { "text": "…\n@mean_fare[34.65]" }], "*": [{ "text": "I do not know." }] }
 * ```
 *
 * One model serves every question: it knows a question by its prompt, and keeps each question's
 * place in its script (a question asked again starts its script again).
 * @module
 */
import { readFile } from 'node:fs/promises'
import type { LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider'
import { z } from 'zod'
import { InvalidArgumentError } from '../errors.js'
import { ScriptedModel, type ScriptedReply } from '../models/scripted.js'
import type { EvalQuestion } from './dataset.js'
import { benchmarkPrompt } from './prompt.js'

/** Replies by question id (as text), `"*"` for the questions without their own. */
export type Recording = Record<string, ScriptedReply[]>

const reply: z.ZodType<ScriptedReply> = z.union([
  z.object({ code: z.string(), text: z.string().optional() }).strict(),
  z.object({ text: z.string(), finishReason: z.enum(['stop', 'length']).optional() }).strict(),
  z
    .object({ toolCall: z.object({ name: z.string(), input: z.string() }), text: z.string().optional() })
    .strict(),
])
const recording = z.record(z.string().regex(/^(\d+|\*)$/, 'keys are question ids or "*"'), z.array(reply))

/** Reads and checks a recording file. */
export async function readRecording(path: string): Promise<Recording> {
  let json: unknown
  try {
    json = JSON.parse(await readFile(path, 'utf8'))
  } catch (error) {
    throw new InvalidArgumentError(`Cannot read the recorded replies in ${path}: ${(error as Error).message}`)
  }
  const parsed = recording.safeParse(json)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new InvalidArgumentError(
      `The recorded replies in ${path} are not in the expected shape: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim(),
      { hint: 'Write { "<question id>": [{ "code": "…" }, { "text": "…" }], "*": [...] }.' },
    )
  }
  return parsed.data
}

/** The text of the prompt's first user message: the question as the harness asked it. */
function firstQuestion(prompt: LanguageModelV3CallOptions['prompt']): string {
  const user = prompt.find((message) => message.role === 'user')
  if (!user || typeof user.content === 'string') return ''
  return user.content.map((part) => (part.type === 'text' ? part.text : '')).join('')
}

const NO_REPLY: ScriptedReply[] = [{ text: 'No recorded reply for this question.' }]

export class RecordedModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3'
  readonly provider = 'replay'
  readonly supportedUrls = {}
  private readonly ids = new Map<string, string>()
  private readonly scripts = new Map<string, ScriptedModel>()

  constructor(
    private readonly recording: Recording,
    questions: EvalQuestion[],
    readonly modelId = 'recording',
  ) {
    for (const question of questions) this.ids.set(benchmarkPrompt(question), String(question.id))
  }

  /** The script of the question this call is about, from its start when the question is new. */
  private script(options: LanguageModelV3CallOptions): ScriptedModel {
    const key = this.ids.get(firstQuestion(options.prompt)) ?? '?'
    const fresh = !options.prompt.some((message) => message.role === 'assistant')
    let model = this.scripts.get(key)
    if (!model || fresh) {
      model = new ScriptedModel(this.recording[key] ?? this.recording['*'] ?? NO_REPLY, {
        provider: this.provider,
        modelId: this.modelId,
      })
      this.scripts.set(key, model)
    }
    return model
  }

  doGenerate(options: LanguageModelV3CallOptions) {
    return this.script(options).doGenerate(options)
  }

  doStream(options: LanguageModelV3CallOptions) {
    return this.script(options).doStream(options)
  }
}
