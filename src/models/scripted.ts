/**
 * A model that replies from a script: the demo's recorded replies, tests, and benchmarks of the
 * loop. It implements the AI SDK's language model spec (v3), streaming or not, so it goes through
 * the same loop as a real model.
 * @module
 */
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
} from '@ai-sdk/provider'

/**
 * One reply. `code` becomes a `run_python` tool call when the loop offers tools, and a fenced
 * block in the text otherwise; `toolCall` is a raw call (e.g. with invalid JSON).
 */
export type ScriptedReply =
  | { text: string; finishReason?: 'stop' | 'length' }
  | { code: string; text?: string }
  | { toolCall: { name: string; input: string }; text?: string }

/** A reply, or a function of the prompt so far that returns one (to react to what the code printed). */
export type ScriptStep = ScriptedReply | ((prompt: LanguageModelV3CallOptions['prompt']) => ScriptedReply)

export interface ScriptedModelOptions {
  provider?: string
  modelId?: string
  /** Tokens reported per reply. @default 10 in, 10 out */
  usage?: { input: number; output: number }
}

export class ScriptedModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3'
  readonly provider: string
  readonly modelId: string
  readonly supportedUrls = {}
  /** The prompt of every call, in order. */
  readonly calls: LanguageModelV3CallOptions[] = []
  private next = 0

  constructor(
    private readonly script: ScriptStep[],
    private readonly options: ScriptedModelOptions = {},
  ) {
    this.provider = options.provider ?? 'scripted'
    this.modelId = options.modelId ?? 'script'
  }

  /** Replies not given yet. */
  get remaining(): number {
    return this.script.length - this.next
  }

  private reply(options: LanguageModelV3CallOptions): {
    content: LanguageModelV3Content[]
    finish: 'stop' | 'length' | 'tool-calls'
  } {
    this.calls.push(options)
    const step = this.script[this.next++] ?? { text: 'The script has no more replies.' }
    const reply = typeof step === 'function' ? step(options.prompt) : step
    const tools = (options.tools ?? []).length > 0
    const content: LanguageModelV3Content[] = []
    const id = `call_${this.next}`
    if ('code' in reply) {
      if (tools) {
        if (reply.text) content.push({ type: 'text', text: reply.text })
        content.push({
          type: 'tool-call',
          toolCallId: id,
          toolName: 'run_python',
          input: JSON.stringify({ code: reply.code }),
        })
        return { content, finish: 'tool-calls' }
      }
      content.push({
        type: 'text',
        text: `${reply.text ? `${reply.text}\n\n` : ''}\`\`\`python\n${reply.code}\n\`\`\``,
      })
      return { content, finish: 'stop' }
    }
    if ('toolCall' in reply) {
      if (reply.text) content.push({ type: 'text', text: reply.text })
      content.push({
        type: 'tool-call',
        toolCallId: id,
        toolName: reply.toolCall.name,
        input: reply.toolCall.input,
      })
      return { content, finish: 'tool-calls' }
    }
    content.push({ type: 'text', text: reply.text })
    return { content, finish: reply.finishReason ?? 'stop' }
  }

  private get usage() {
    const { input = 10, output = 10 } = this.options.usage ?? {}
    return {
      inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: output, text: output, reasoning: undefined },
    }
  }

  async doGenerate(options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    const { content, finish } = this.reply(options)
    return { content, finishReason: { unified: finish, raw: finish }, usage: this.usage, warnings: [] }
  }

  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const { content, finish } = this.reply(options)
    const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }]
    content.forEach((part, index) => {
      if (part.type === 'text') {
        const id = `text_${index}`
        parts.push({ type: 'text-start', id })
        // A few deltas, as a real stream sends them.
        for (const delta of part.text.match(/[\s\S]{1,40}/g) ?? [])
          parts.push({ type: 'text-delta', id, delta })
        parts.push({ type: 'text-end', id })
      } else if (part.type === 'tool-call') {
        parts.push(part)
      }
    })
    parts.push({ type: 'finish', finishReason: { unified: finish, raw: finish }, usage: this.usage })
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      start(controller) {
        for (const part of parts) controller.enqueue(part)
        controller.close()
      },
    })
    return { stream }
  }
}
