/**
 * The analysis loop: model → code → guard → sandbox → observation → model, until a final answer
 * or the step cap. One `Analyst` is one conversation with one sandbox; `ask()` yields
 * typed events as it works and ends with `done`.
 * @module
 */
import { randomUUID } from 'node:crypto'
import {
  generateText,
  jsonSchema,
  type LanguageModel,
  type LanguageModelUsage,
  type ModelMessage,
  streamText,
  type ToolResultPart,
  tool,
} from 'ai'
import { ConflictError, type Fix, InvalidArgumentError, ModelCallError } from '../errors.js'
import type { CodeMode } from '../models/index.js'
import { type Artifact, type Execution, ExecutionError, type Sandbox } from '../sandbox/index.js'
import type { AgentEvent, AskResult, StepRecord, Usage, Violation } from './events.js'
import { extractCode } from './extract.js'
import { Evidence, unsupportedNumbers } from './grounding.js'
import { describeArtifacts, observe, truncateMiddle } from './observation.js'
import { EMPTY_REPLY_NUDGE, systemPrompt } from './prompt.js'

export const RUN_PYTHON = 'run_python'

/** The static check applied to code before it runs; violations go back to the model. */
export type CodeCheck = (code: string) => Promise<Violation[]>

/**
 * A tool beside run_python (tools mode), e.g. a function deployed on Modal (--modal-tool): its
 * observation goes to the model; the files it returns are written to the workspace, where code
 * can use them, and are the step's artifacts.
 */
export interface AnalystTool {
  name: string
  description: string
  inputSchema: Record<string, unknown>
  /** `signal` aborts when the question is cancelled; the loop stops waiting for the call then. */
  call(
    input: unknown,
    options?: { signal?: AbortSignal },
  ): Promise<{
    observation: string
    files: Array<{ name: string; data: Uint8Array; mimeType: string }>
    /** false: the call failed, and `observation` says why. @default true */
    ok?: boolean
  }>
}

/** The name a failed tool call's step shows as its error. */
const TOOL_ERROR = 'ToolError'

export interface AnalystOptions {
  model: LanguageModel
  /** How code reaches the sandbox. */
  mode: CodeMode
  sandbox: Sandbox
  /** The prompt's description of the data files (their profiles). */
  dataDescription: string
  /** Name of the model, for the result. */
  modelName?: string
  /** @default 8 */
  maxSteps?: number
  /** Show images to the model (for models that read them). @default false */
  vision?: boolean
  /** Per cell. @default 60_000 */
  cellTimeoutMs?: number
  /** Per model request. @default 120_000 */
  requestTimeoutMs?: number
  /** Retries of a model request on 429, 5xx and network errors (with backoff, honouring Retry-After). @default 3 */
  maxRetries?: number
  /** Stream the model's reply (deltas reach the caller as they come). @default true */
  stream?: boolean
  /** The guard. @default none: everything runs */
  check?: CodeCheck
  /** Names images for the user (e.g. where the CLI saved them); the model is told the name. */
  nameImage?: (step: number, index: number) => string
  sessionId?: string
  /** The conversation so far, when continuing a stored session. */
  history?: ModelMessage[]
  /** Earlier outputs (of a stored session) that numbers in answers may cite. */
  evidence?: string[]
  /** More tools the model may call, in tools mode. */
  tools?: AnalystTool[]
}

export { ModelCallError }

const runPythonTool = tool({
  description:
    'Run Python code in the stateful sandbox (a Jupyter-like kernel) and get back its output: stdout, the value of the last expression, errors with traceback, and the files it saved.',
  // A plain JSON schema: converting a zod schema again on every model call costs milliseconds.
  inputSchema: jsonSchema<{ code: string }>({
    type: 'object',
    properties: { code: { type: 'string', description: 'The complete Python code to run' } },
    required: ['code'],
    additionalProperties: false,
  }),
})

function toUsage(usage: LanguageModelUsage | undefined): Usage {
  const inputTokens = usage?.inputTokens ?? 0
  const outputTokens = usage?.outputTokens ?? 0
  return { inputTokens, outputTokens, totalTokens: usage?.totalTokens ?? inputTokens + outputTokens }
}

function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  }
}

/** A model reply, the same whether it was streamed or not. */
interface Reply {
  text: string
  toolCalls: Array<{
    toolCallId: string
    toolName: string
    input: unknown
    invalid?: boolean
    error?: unknown
  }>
  finishReason: string
  usage: Usage
  messages: ModelMessage[]
}

/** A queue of events that a step produces while it runs, drained by the async generator. */
class EventQueue {
  private items: AgentEvent[] = []
  private wake: (() => void) | undefined
  push(event: AgentEvent) {
    this.items.push(event)
    this.wake?.()
  }
  async *drain(until: Promise<unknown>): AsyncGenerator<AgentEvent> {
    let settled = false
    until.then(
      () => {
        settled = true
        this.wake?.()
      },
      () => {
        settled = true
        this.wake?.()
      },
    )
    for (;;) {
      while (this.items.length > 0) yield this.items.shift() as AgentEvent
      if (settled) return
      await new Promise<void>((resolve) => {
        this.wake = resolve
      })
      this.wake = undefined
    }
  }
}

type Defaulted = 'maxSteps' | 'vision' | 'cellTimeoutMs' | 'requestTimeoutMs' | 'maxRetries' | 'stream'

export class Analyst {
  readonly sessionId: string
  /** The conversation so far, as the model sees it (system prompt aside). */
  readonly messages: ModelMessage[] = []
  usage: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 }
  private readonly evidence = new Evidence()
  private readonly options: AnalystOptions & Required<Pick<AnalystOptions, Defaulted>>
  private busy = false

  constructor(options: AnalystOptions) {
    this.sessionId = options.sessionId ?? randomUUID()
    const given = Object.fromEntries(
      Object.entries(options).filter(([, value]) => value !== undefined),
    ) as AnalystOptions
    this.options = {
      maxSteps: 8,
      vision: false,
      cellTimeoutMs: 60_000,
      requestTimeoutMs: 120_000,
      maxRetries: 3,
      stream: true,
      ...given,
    }
    if (this.options.mode === 'text' && this.options.tools?.length) {
      // In text mode the model is offered no tools: they would be silently unused.
      throw new InvalidArgumentError(
        `The tools ${this.options.tools.map((t) => t.name).join(', ')} need a model that calls tools, and this one writes code as text`,
        {
          hint: 'Use the tools mode (--mode tools) with a model that supports tool calls, or leave the tools out.',
        },
      )
    }
    this.evidence.add(options.dataDescription)
    for (const text of options.evidence ?? []) this.evidence.add(text)
    this.messages.push(...(options.history ?? []))
  }

  private get system(): string {
    return systemPrompt({
      mode: this.options.mode,
      dataDescription: this.options.dataDescription,
      gpu: this.options.sandbox.gpu,
    })
  }

  /** New data files reached the sandbox: the next question's prompt describes them all. */
  setDataDescription(description: string) {
    this.options.dataDescription = description
    this.evidence.add(description)
  }

  /** Calls the model once; in text mode it is offered no tools. */
  private async callModel(step: number, queue: EventQueue, signal?: AbortSignal): Promise<Reply> {
    const tools =
      this.options.mode === 'tools'
        ? {
            [RUN_PYTHON]: runPythonTool,
            ...Object.fromEntries(
              (this.options.tools ?? []).map((extra) => [
                extra.name,
                tool({ description: extra.description, inputSchema: jsonSchema(extra.inputSchema) }),
              ]),
            ),
          }
        : undefined
    const common = {
      model: this.options.model,
      system: this.system,
      messages: this.messages,
      tools,
      maxRetries: this.options.maxRetries,
      abortSignal: signal,
      timeout: this.options.requestTimeoutMs,
    }
    try {
      if (!this.options.stream) {
        const result = await generateText(common)
        return {
          text: result.text,
          toolCalls: result.toolCalls,
          finishReason: result.finishReason,
          usage: toUsage(result.usage),
          messages: result.response.messages,
        }
      }
      let failure: unknown
      let finished: ((event: Reply) => void) | undefined
      const whenFinished = new Promise<Reply>((resolve) => {
        finished = resolve
      })
      // onFinish carries the whole reply: cheaper than awaiting each of the result's promises.
      const result = streamText({
        ...common,
        onError: ({ error }) => {
          failure = error
        },
        onFinish: (event) =>
          finished?.({
            text: event.text,
            toolCalls: event.toolCalls,
            finishReason: event.finishReason,
            usage: toUsage(event.usage),
            messages: event.response.messages,
          }),
      })
      for await (const part of result.fullStream) {
        if (part.type === 'text-delta' && part.text)
          queue.push({ type: 'model-text-delta', step, delta: part.text })
        if (part.type === 'error') failure = part.error
        if (part.type === 'abort') failure = signal?.reason ?? new Error('the model request was aborted')
      }
      if (failure) throw failure
      return await whenFinished
    } catch (error) {
      if (signal?.aborted) throw signal.reason ?? error
      throw describeModelError(error)
    }
  }

  /** Asks a question; yields what happens, ending with `done`. Questions in one session take turns. */
  async *ask(
    question: string,
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<AgentEvent, AskResult> {
    if (this.busy)
      throw new ConflictError('This session is already answering a question', {
        hint: 'Wait for it to finish.',
      })
    this.busy = true
    try {
      return yield* this.analyze(question, options.signal)
    } finally {
      this.busy = false
    }
  }

  private async *analyze(question: string, signal?: AbortSignal): AsyncGenerator<AgentEvent, AskResult> {
    const { maxSteps } = this.options
    const usageBefore = this.usage
    this.evidence.add(question)
    this.messages.push({ role: 'user', content: question })
    const steps: StepRecord[] = []
    const artifacts: Artifact[] = []
    let answer: string | undefined
    let lastError: string | undefined
    let lastCode: string | undefined
    const ranBefore = new Set<string>()
    for (let step = 1; step <= maxSteps && answer === undefined; step++) {
      signal?.throwIfAborted()
      yield { type: 'step-start', step, maxSteps }
      const queue = new EventQueue()
      const replying = this.callModel(step, queue, signal)
      yield* queue.drain(replying)
      const reply = await replying
      this.usage = addUsage(this.usage, reply.usage)
      yield { type: 'usage', step, usage: reply.usage, total: this.usage }
      if (reply.text) yield { type: 'model-text', step, text: reply.text }

      // What to run: tool calls (tools mode), else fenced code in the text (either mode).
      const calls = reply.toolCalls
      const extracted = extractCode(reply.text)
      const runs: Array<{
        code?: string
        toolCallId?: string
        /** The name the model called, which its tool result must carry. */
        toolName?: string
        problem?: string
        tool?: AnalystTool
        input?: unknown
      }> = []
      for (const call of calls) {
        const input = call.input as { code?: unknown } | undefined
        const extra = this.options.tools?.find((candidate) => candidate.name === call.toolName)
        if (extra) {
          runs.push({ toolCallId: call.toolCallId, toolName: call.toolName, tool: extra, input: call.input })
        } else if (call.toolName !== RUN_PYTHON) {
          runs.push({
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            problem: `There is no tool named ${call.toolName}. Use ${RUN_PYTHON} with a "code" argument.`,
          })
        } else if (call.invalid || typeof input?.code !== 'string') {
          runs.push({
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            problem: `The ${RUN_PYTHON} call had invalid arguments; nothing ran. Call it with JSON {"code": "<python code>"}.`,
          })
        } else if (!input.code.trim()) {
          runs.push({
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            problem: 'The code was empty; nothing ran.',
          })
        } else {
          runs.push({ toolCallId: call.toolCallId, toolName: call.toolName, code: input.code })
        }
      }
      if (calls.length === 0) {
        if (extracted.code && extracted.prose && ranBefore.has(extracted.code.trim())) {
          // A final answer that shows code it already ran, for the reader: not a new step.
          answer = reply.text.trim()
          break
        } else if (extracted.code) {
          runs.push({ code: extracted.code })
        } else if (extracted.unterminated || reply.finishReason === 'length') {
          runs.push({
            problem:
              reply.finishReason === 'length'
                ? 'Your reply was cut off (too long) before the code block was closed; nothing ran. Send shorter code: one step at a time.'
                : 'Your code block was not closed with ```; nothing ran. Send the code again in a complete ```python block.',
          })
        } else if (extracted.otherLanguages.length > 0) {
          runs.push({
            problem: `Only Python runs here, not ${extracted.otherLanguages.join(', ')}. Rewrite the step in Python (pandas can do it).`,
          })
        } else if (reply.text.trim()) {
          answer = reply.text.trim()
          break
        } else {
          runs.push({ problem: EMPTY_REPLY_NUDGE })
        }
      }

      // The loop answers every tool call itself. The AI SDK has already answered an invalid one
      // (a tool-error): drop that, so each call gets exactly one result, as strict providers require.
      const answered = new Set(runs.flatMap((run) => (run.toolCallId ? [run.toolCallId] : [])))
      this.messages.push(...withoutToolResults(reply.messages, answered))

      // The model's words around its code, for the record.
      const prose = (calls.length > 0 ? reply.text : extracted.prose).trim() || undefined
      const toolResults: ToolResultPart[] = []
      const textObservations: string[] = []
      const images: Array<{ data: string; mediaType: string }> = []
      let stepDone = false
      try {
        for (const run of runs) {
          let observation: string
          let ran = false
          if (run.tool) {
            const started = Date.now()
            const input = run.input ?? {}
            // What the step shows for the call (a comment: replaying the session runs nothing).
            const code = `# ${run.tool.name}(${JSON.stringify(input)})`
            yield { type: 'code', step, code, source: 'tool' }
            const outcome = await unlessAborted(run.tool.call(run.input, { signal }), signal)
            // The call's result is the step's output, as a cell's would be: the record, the history
            // and every view show it; a failure is the step's error.
            const error =
              outcome.ok === false ? new ExecutionError(TOOL_ERROR, outcome.observation, '') : undefined
            const stdout = error ? [] : [`${outcome.observation}\n`]
            if (error) yield { type: 'error', step, error }
            else yield { type: 'stdout', step, text: stdout[0] as string }
            this.evidence.add(outcome.observation)
            const saved: Artifact[] = []
            for (const file of outcome.files) {
              const info = await this.options.sandbox.files.write(file.name, file.data)
              saved.push({
                name: file.name,
                path: info.path,
                size: file.data.length,
                mimeType: file.mimeType,
              })
            }
            for (const artifact of saved) {
              artifacts.push(artifact)
              yield { type: 'artifact', step, artifact }
            }
            observation = saved.length
              ? `${outcome.observation}\nSaved in the working directory: ${saved.map((a) => a.name).join(', ')}`
              : outcome.observation
            steps.push({
              step,
              code,
              text: prose,
              tool: { name: run.tool.name, input },
              execution: {
                results: [],
                logs: { stdout, stderr: [] },
                error: error?.toJSON(),
                executionCount: undefined,
                artifacts: saved,
              },
              artifacts: saved,
              durationMs: Date.now() - started,
              usage: reply.usage,
            })
          } else if (run.problem || run.code === undefined) {
            observation = run.problem ?? EMPTY_REPLY_NUDGE
          } else {
            const code = run.code
            yield { type: 'code', step, code, source: run.toolCallId ? 'tool' : 'text' }
            const started = Date.now()
            const violations = this.options.check ? await this.options.check(code) : []
            if (violations.length > 0) {
              yield { type: 'guard', step, violations }
              observation = `Nothing ran: the code breaks the sandbox's rules.\n${violations
                .map((v) => `- line ${v.line}, column ${v.column} [${v.rule}]: ${v.message}`)
                .join('\n')}`
              steps.push({
                step,
                code,
                text: prose,
                artifacts: [],
                violations,
                durationMs: Date.now() - started,
                usage: reply.usage,
              })
              yield { type: 'step-end', step, record: steps.at(-1) as StepRecord }
            } else {
              const running = this.runCell(step, code, queue, signal)
              yield* queue.drain(running)
              const { execution, imageNames } = await running
              ran = true
              for (const artifact of execution.artifacts) {
                artifacts.push(artifact)
                yield { type: 'artifact', step, artifact }
              }
              const notes: string[] = []
              const errorKey = execution.error
                ? `${execution.error.name}: ${execution.error.value}`
                : undefined
              if (errorKey && errorKey === lastError) {
                notes.push(
                  'This is the same error as in your previous step. Look at the cause again (inspect the data) and change your approach.',
                )
              }
              if (code.trim() === lastCode) {
                notes.push(
                  'You ran exactly the same code as in the previous step. Change the code, or give the final answer if you have it.',
                )
              }
              lastError = errorKey
              lastCode = code.trim()
              if (!execution.error) ranBefore.add(lastCode)
              observation = observe({ execution, imageNames, notes })
              steps.push({
                step,
                code,
                text: prose,
                execution: execution.toJSON(),
                artifacts: execution.artifacts,
                durationMs: Date.now() - started,
                images: imageNames,
                usage: reply.usage,
              })
              if (this.options.vision) {
                for (const result of execution.results) {
                  if (result.png) images.push({ data: result.png, mediaType: 'image/png' })
                  else if (result.jpeg) images.push({ data: result.jpeg, mediaType: 'image/jpeg' })
                }
              }
            }
          }
          yield { type: 'observation', step, text: observation }
          if (
            (run.code !== undefined || run.tool) &&
            steps.at(-1)?.step === step &&
            !steps.at(-1)?.violations
          ) {
            yield { type: 'step-end', step, record: steps.at(-1) as StepRecord }
          }
          if (run.toolCallId) {
            toolResults.push({
              type: 'tool-result',
              toolCallId: run.toolCallId,
              toolName: run.toolName ?? RUN_PYTHON,
              output: { type: 'text', value: observation },
            })
          } else {
            // Label what the model is told for what it is: output only where code ran.
            textObservations.push(ran ? `Output of your code:\n${observation}` : observation)
          }
        }
        stepDone = true
      } finally {
        // Cancelled, failed or abandoned mid-step: answer every tool call, so the history stays
        // valid for the next question.
        if (!stepDone) {
          const resulted = new Set(toolResults.map((r) => r.toolCallId))
          for (const run of runs) {
            if (run.toolCallId && !resulted.has(run.toolCallId)) {
              toolResults.push({
                type: 'tool-result',
                toolCallId: run.toolCallId,
                toolName: run.toolName ?? RUN_PYTHON,
                output: { type: 'text', value: 'The run was cancelled before it finished.' },
              })
            }
          }
          if (toolResults.length > 0) this.messages.push({ role: 'tool', content: toolResults })
        }
      }
      // Every tool call gets its result (real APIs reject a history without them).
      if (toolResults.length > 0) this.messages.push({ role: 'tool', content: toolResults })
      if (textObservations.length > 0) {
        this.messages.push({
          role: 'user',
          content: textObservations.join('\n\n'),
        })
      }
      if (images.length > 0) {
        this.messages.push({
          role: 'user',
          content: [
            { type: 'text', text: 'The charts from that step:' },
            ...images.map((image) => ({
              type: 'image' as const,
              image: image.data,
              mediaType: image.mediaType,
            })),
          ],
        })
      }
    }

    const incomplete = answer === undefined
    const text = answer ?? this.findingsSoFar(steps, maxSteps)
    if (!incomplete) this.messages.push({ role: 'assistant', content: text })
    const unsupported = incomplete ? [] : unsupportedNumbers(text, this.evidence)
    yield { type: 'answer', text, incomplete, unsupportedNumbers: unsupported }
    const result: AskResult = {
      answer: text,
      incomplete,
      steps,
      artifacts,
      unsupportedNumbers: unsupported,
      usage: {
        inputTokens: this.usage.inputTokens - usageBefore.inputTokens,
        outputTokens: this.usage.outputTokens - usageBefore.outputTokens,
        totalTokens: this.usage.totalTokens - usageBefore.totalTokens,
      },
      sessionId: this.sessionId,
      model: this.options.modelName ?? modelName(this.options.model),
    }
    yield { type: 'done', result }
    return result
  }

  /**
   * A cell someone else ran in this sandbox (an MCP client, a person): the conversation says so,
   * so that the next question knows what the kernel holds; its output counts as evidence.
   */
  noteCell(code: string, execution: Execution | undefined, violations: Violation[] = []) {
    if (execution) this.addEvidence(execution)
    const what = execution
      ? observe({ execution, imageNames: [], notes: [] })
      : `Nothing ran: the guard stopped it (${violations.map((v) => v.message).join('; ')}).`
    this.messages.push({
      role: 'user',
      content: `This code was run in the sandbox outside our conversation:\n\`\`\`python\n${code}\n\`\`\`\n${what}`,
    })
  }

  private addEvidence(execution: Execution) {
    for (const line of [...execution.logs.stdout, ...execution.logs.stderr]) this.evidence.add(line)
    for (const result of execution.results) {
      if (result.text) this.evidence.add(result.text)
      if (result.data) for (const column of Object.values(result.data)) this.evidence.addValues(column)
    }
  }

  private async runCell(
    step: number,
    code: string,
    queue: EventQueue,
    signal?: AbortSignal,
  ): Promise<{ execution: Execution; imageNames: string[] }> {
    const imageNames: string[] = []
    const execution = await this.options.sandbox.runCode(code, {
      timeoutMs: this.options.cellTimeoutMs,
      signal,
      onStdout: (message) => queue.push({ type: 'stdout', step, text: message.line }),
      onStderr: (message) => queue.push({ type: 'stderr', step, text: message.line }),
      onResult: (result) => {
        if ((result.png || result.jpeg || result.svg) && this.options.nameImage) {
          imageNames.push(this.options.nameImage(step, imageNames.length + 1))
        }
        queue.push({ type: 'result', step, result })
      },
      onError: (error) => queue.push({ type: 'error', step, error }),
    })
    this.addEvidence(execution)
    return { execution, imageNames }
  }

  /** The answer when the step cap ends the analysis: what the last successful steps showed. */
  private findingsSoFar(steps: StepRecord[], maxSteps: number): string {
    const lines = [`The analysis stopped after ${maxSteps} steps without a final answer (incomplete).`]
    const succeeded = steps.filter((s) => s.execution && !s.execution.error).slice(-2)
    if (succeeded.length === 0) {
      lines.push('No step ran without an error.')
      const last = steps.at(-1)?.execution?.error
      if (last) lines.push(`The last error was ${last.name}: ${last.value}`)
    } else {
      lines.push('What the code found so far:')
      for (const s of succeeded) {
        const out = [
          s.execution?.logs.stdout.join('') ?? '',
          ...(s.execution?.results.map((r) => String(r.text ?? '')) ?? []),
        ]
          .join('\n')
          .trim()
        lines.push(`Step ${s.step}:\n${truncateMiddle(out || '(no output)', 1500)}`)
        if (s.artifacts.length > 0) lines.push(`Files: ${describeArtifacts(s.artifacts)}`)
      }
    }
    return lines.join('\n')
  }
}

/** The messages without the tool results of these calls (messages left empty are dropped). */
function withoutToolResults(messages: ModelMessage[], callIds: Set<string>): ModelMessage[] {
  if (callIds.size === 0) return messages
  return messages.flatMap((message): ModelMessage[] => {
    if (message.role !== 'tool') return [message]
    const content = message.content.filter((part) => !('toolCallId' in part) || !callIds.has(part.toolCallId))
    return content.length > 0 ? [{ ...message, content }] : []
  })
}

/** The promise, or the signal's reason once it aborts: a tool that ignores its signal does not hold the question. */
function unlessAborted<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

function modelName(model: LanguageModel): string {
  return typeof model === 'string' ? model : `${model.provider}:${model.modelId}`
}

/** A model error the loop cannot repair, with what the user can do about it. */
function describeModelError(error: unknown): ModelCallError {
  const e = error as {
    name?: string
    message?: string
    statusCode?: number
    lastError?: unknown
    reason?: string
    errors?: unknown[]
  }
  const last = (e.lastError ?? e) as { statusCode?: number; message?: string; url?: string }
  const status = last.statusCode
  const detail = (last.message ?? e.message ?? String(error)).split('\n')[0] ?? ''
  let fix: Fix | undefined
  let hint: string | undefined
  if (status === 401 || status === 403) fix = { setting: 'apiKey' }
  else if (status === 404) {
    fix = { setting: 'model' }
    hint = 'Check the base URL too, for a server of your own.'
  } else if (status === 429) hint = 'The provider is rate limiting: wait a moment and try again.'
  else if (status !== undefined && status >= 500)
    hint = 'The model server failed repeatedly; try again later.'
  else if (/timeout|timed out|aborted/i.test(String(e.name) + detail)) {
    fix = { setting: 'requestTimeout' }
    hint = 'The model did not answer in time; check the server.'
  } else if (/fetch failed|ECONNREFUSED|connect|ENOTFOUND/i.test(detail)) {
    fix = { setting: 'baseUrl' }
    hint = 'The model server cannot be reached; check that it is running.'
  }
  return new ModelCallError(`The model request failed${status ? ` (HTTP ${status})` : ''}: ${detail}`, {
    cause: error,
    hint,
    fix,
  })
}
