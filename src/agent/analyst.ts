/**
 * The analysis loop: model → code → guard → sandbox → observation → model, until a final answer
 * or the step cap. One `Analyst` is one conversation with one sandbox; `ask()` yields typed events
 * as it works and ends with `done`. Its parts sit beside it: the model call (model-call.ts), a
 * reply → its runs (runs.ts), one run (step.ts), what goes back to the model (history.ts).
 * @module
 */
import { randomUUID } from 'node:crypto'
import type { LanguageModel, ModelMessage, ToolSet } from 'ai'
import { ConflictError, InvalidArgumentError, ModelCallError } from '../errors.js'
import { splitFollowUps } from '../follow-ups.js'
import type { CodeMode } from '../models/index.js'
import type { Execution, Sandbox } from '../sandbox/index.js'
import type { AgentEvent, AskResult, RefusedFile, StepRecord, Usage, Violation } from './events.js'
import { findingsSoFar } from './findings.js'
import { Evidence, unsupportedNumbers } from './grounding.js'
import { CANCELLED, outsideCellMessage, replyMessages, StepHistory } from './history.js'
import { type AnalysisLanguage, type LanguageProfile, languageProfile } from './language.js'
import { addUsage, callModel, modelName, type Reply } from './model-call.js'
import { refusedNote } from './observation.js'
import { systemPrompt } from './prompt.js'
import { EventQueue } from './queue.js'
import { planRuns } from './runs.js'
import { type CodeCheck, closingEvents, Repeats, runStep, type StepSettings } from './step.js'
import { type AnalystTool, offeredTools } from './tools.js'

export type { CodeCheck } from './step.js'
export { type AnalystTool, RUN_PYTHON, type ToolOutcome } from './tools.js'
export { ModelCallError }

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
  /** More tools the model may call, in tools mode (e.g. functions deployed on Modal, --modal-tool). */
  tools?: AnalystTool[]
  /** The language the model writes its analysis in; cells run in the sandbox's context of it. @default 'python' */
  language?: AnalysisLanguage
}

type Defaulted = 'maxSteps' | 'vision' | 'cellTimeoutMs' | 'requestTimeoutMs' | 'maxRetries' | 'stream'

export class Analyst {
  readonly sessionId: string
  /** The conversation so far, as the model sees it (system prompt aside). */
  readonly messages: ModelMessage[] = []
  usage: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 }
  private readonly evidence = new Evidence()
  private readonly options: AnalystOptions & Required<Pick<AnalystOptions, Defaulted>>
  private readonly tools: ToolSet | undefined
  private readonly stepSettings: StepSettings
  private readonly language: LanguageProfile
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
    this.language = languageProfile(this.options.language)
    this.tools = offeredTools(this.options.mode, this.options.tools, this.language)
    const { sandbox, check, cellTimeoutMs, nameImage, vision } = this.options
    const { language } = this
    this.stepSettings = {
      sandbox,
      check,
      cellTimeoutMs,
      nameImage,
      vision,
      evidence: this.evidence,
      language,
    }
  }

  private get system(): string {
    return systemPrompt({
      mode: this.options.mode,
      dataDescription: this.options.dataDescription,
      gpu: this.options.sandbox.gpu,
      environment: this.options.sandbox.environment,
      language: this.language.language,
    })
  }

  /** New data files reached the sandbox: the next question's prompt describes them all. */
  setDataDescription(description: string) {
    this.options.dataDescription = description
    this.evidence.add(description)
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
    const repeats = new Repeats()
    let answer: string | undefined
    let followUps: string[] = []
    for (let step = 1; step <= maxSteps && answer === undefined; step++) {
      signal?.throwIfAborted()
      yield { type: 'step-start', step, maxSteps }
      const reply = yield* this.reply(step, signal)
      this.usage = addUsage(this.usage, reply.usage)
      yield { type: 'usage', step, usage: reply.usage, total: this.usage }
      if (reply.text) yield { type: 'model-text', step, text: reply.text }
      const plan = planRuns(reply, {
        tools: this.options.tools,
        ranBefore: repeats.ranWithoutError,
        language: this.language,
      })
      if (plan.type === 'answer') {
        // The suggested questions come off the answer: the answer's numbers and history are its own.
        ;({ answer, followUps } = splitFollowUps(plan.text))
        break
      }
      this.messages.push(...replyMessages(reply.messages, plan.runs))
      const history = new StepHistory(plan.runs)
      const context = { step, prose: plan.prose, usage: reply.usage, signal, repeats }
      try {
        for (const run of plan.runs) {
          const outcome = yield* runStep(run, this.stepSettings, context)
          // Into the history first: a question abandoned at the events below still tells the
          // model what the run found.
          history.add(run, outcome)
          if (outcome.record) steps.push(outcome.record)
          yield* closingEvents(step, outcome)
          // Whoever keeps the step (at step-end) may have refused some of its files, the disk
          // full: the model is told before its next call, and the run's events say it too.
          const refused = refusedNote(outcome.record?.refused)
          if (refused) {
            history.note(run, refused)
            yield { type: 'observation', step, text: refused }
          }
        }
      } finally {
        // Cancelled, failed or abandoned mid-step too: every tool call gets its answer, so that
        // the history stays valid for the next question.
        this.messages.push(...history.messages())
      }
    }

    const incomplete = answer === undefined
    const text = answer ?? findingsSoFar(steps, maxSteps)
    if (!incomplete) this.messages.push({ role: 'assistant', content: text })
    const unsupported = incomplete ? [] : unsupportedNumbers(text, this.evidence)
    yield {
      type: 'answer',
      text,
      incomplete,
      unsupportedNumbers: unsupported,
      ...(followUps.length ? { followUps } : {}),
    }
    const result: AskResult = {
      answer: text,
      ...(followUps.length ? { followUps } : {}),
      incomplete,
      steps,
      // As kept: without the files that were refused (record.refused).
      artifacts: steps.flatMap((record) => record.artifacts),
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

  /** Calls the model once; its text reaches the caller as it streams. */
  private async *reply(step: number, signal?: AbortSignal): AsyncGenerator<AgentEvent, Reply> {
    const queue = new EventQueue()
    const replying = callModel({
      model: this.options.model,
      system: this.system,
      messages: this.messages,
      tools: this.tools,
      maxRetries: this.options.maxRetries,
      requestTimeoutMs: this.options.requestTimeoutMs,
      stream: this.options.stream,
      signal,
      onTextDelta: (delta) => queue.push({ type: 'model-text-delta', step, delta }),
    })
    yield* queue.drain(replying)
    return await replying
  }

  /**
   * A cell someone else ran in this sandbox (an MCP client, a person): the conversation says so,
   * so that the next question knows what the kernel holds; its output counts as evidence.
   */
  noteCell(
    code: string,
    execution: Execution | undefined,
    violations: Violation[] = [],
    refused?: RefusedFile[],
  ) {
    if (execution) this.evidence.addExecution(execution)
    this.messages.push(outsideCellMessage(code, execution, violations, refused))
  }

  /** A cell someone else ran here was stopped before it ended: the kernel may hold part of what it did. */
  noteStoppedCell(code: string) {
    this.messages.push(outsideCellMessage(code, undefined, [], undefined, CANCELLED))
  }
}
