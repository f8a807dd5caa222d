/**
 * One run of a step: a call of an extra tool, or a cell (the guard first, then the sandbox), with
 * its record and what the model is told. `runStep` yields the events of the work as it happens and
 * returns the outcome; `closingEvents` are yielded once the history holds the outcome, so that a
 * question abandoned after the work still tells the model what it found.
 * @module
 */
import { type Artifact, type Execution, ExecutionError, type Sandbox } from '../sandbox/index.js'
import type { AgentEvent, StepRecord, Usage, Violation } from './events.js'
import type { Evidence } from './grounding.js'
import type { LanguageProfile } from './language.js'
import { observe } from './observation.js'
import { EventQueue } from './queue.js'
import type { Run } from './runs.js'

/** The static check applied to code before it runs; violations go back to the model. */
export type CodeCheck = (code: string) => Promise<Violation[]>

/** The analyst's settings that every step uses. */
export interface StepSettings {
  sandbox: Sandbox
  /** The language cells are in: the sandbox's default context of it runs them. @default Python */
  language?: LanguageProfile
  /** The guard; none: everything runs. */
  check?: CodeCheck
  cellTimeoutMs: number
  /** Names images for the user; the model is told the name. */
  nameImage?: (step: number, index: number) => string
  /** Images go back to the model. */
  vision: boolean
  /** What numbers in answers may cite: every output is added. */
  evidence: Evidence
}

/** What a run knows of its step and its question. */
export interface StepContext {
  step: number
  /** What the model wrote around its code, for the record. */
  prose?: string
  /** Tokens of the model call that asked for the run. */
  usage: Usage
  signal?: AbortSignal
  repeats: Repeats
}

/** An image for a vision model (base64). */
export interface ModelImage {
  data: string
  mediaType: 'image/png' | 'image/jpeg'
}

export interface StepOutcome {
  /** What the model is told. */
  observation: string
  /** The step's record; none when nothing was tried (a problem with the reply). */
  record?: StepRecord
  /** Code ran in the kernel: the observation is its output. */
  ran: boolean
  /** For a vision model. */
  images: ModelImage[]
}

/** The name a failed tool call's step shows as its error. */
const TOOL_ERROR = 'ToolError'

/**
 * What one question's cells remember of each other: a repeated error or a repeated cell is pointed
 * out, and code that ran without an error is known (a final answer may show it again).
 */
export class Repeats {
  private lastError: string | undefined
  private lastCode: string | undefined
  /** Trimmed code of the cells that ran without an error. */
  readonly ranWithoutError = new Set<string>()

  /** Notes for the model on what this cell repeats of the one before; remembers it for the next. */
  notesFor(code: string, execution: Execution): string[] {
    const notes: string[] = []
    const error = execution.error ? `${execution.error.name}: ${execution.error.value}` : undefined
    if (error && error === this.lastError)
      notes.push(
        'This is the same error as in your previous step. Look at the cause again (inspect the data) and change your approach.',
      )
    const trimmed = code.trim()
    if (trimmed === this.lastCode)
      notes.push(
        'You ran exactly the same code as in the previous step. Change the code, or give the final answer if you have it.',
      )
    this.lastError = error
    this.lastCode = trimmed
    if (!execution.error) this.ranWithoutError.add(trimmed)
    return notes
  }
}

export async function* runStep(
  run: Run,
  settings: StepSettings,
  context: StepContext,
): AsyncGenerator<AgentEvent, StepOutcome> {
  if (run.type === 'problem') return { observation: run.message, ran: false, images: [] }
  // Aborted between two runs of one reply: the next does not start.
  context.signal?.throwIfAborted()
  if (run.type === 'tool') return yield* callTool(run, settings, context)
  return yield* runCell(run.code, run.call ? 'tool' : 'text', settings, context)
}

/**
 * The events that end a run: what the model is told, and the end of a step that tried something.
 * A step the guard stopped ends before the model is told why.
 */
export function closingEvents(step: number, outcome: StepOutcome): AgentEvent[] {
  const observation: AgentEvent = { type: 'observation', step, text: outcome.observation }
  if (!outcome.record) return [observation]
  const end: AgentEvent = { type: 'step-end', step, record: outcome.record }
  return outcome.record.violations ? [end, observation] : [observation, end]
}

async function* callTool(
  run: Extract<Run, { type: 'tool' }>,
  settings: StepSettings,
  { step, prose, usage, signal }: StepContext,
): AsyncGenerator<AgentEvent, StepOutcome> {
  const started = Date.now()
  const input = run.input ?? {}
  // What the step shows for the call (a comment: replaying the session runs nothing).
  const code = `# ${run.tool.name}(${JSON.stringify(input)})`
  yield { type: 'code', step, code, source: 'tool' }
  const outcome = await unlessAborted(run.tool.call(run.input, { signal }), signal)
  // The call's result is the step's output, as a cell's would be: the record, the history and
  // every view show it; a failure is the step's error.
  const error = outcome.ok === false ? new ExecutionError(TOOL_ERROR, outcome.observation, '') : undefined
  const stdout = error ? [] : [`${outcome.observation}\n`]
  if (error) yield { type: 'error', step, error }
  else yield { type: 'stdout', step, text: stdout[0] as string }
  settings.evidence.add(outcome.observation)
  const saved: Artifact[] = []
  for (const file of outcome.files) {
    const info = await settings.sandbox.files.write(file.name, file.data)
    saved.push({ name: file.name, path: info.path, size: file.data.length, mimeType: file.mimeType })
  }
  for (const artifact of saved) yield { type: 'artifact', step, artifact }
  const observation = saved.length
    ? `${outcome.observation}\nSaved in the working directory: ${saved.map((a) => a.name).join(', ')}`
    : outcome.observation
  const record: StepRecord = {
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
    usage,
  }
  return { observation, record, ran: false, images: [] }
}

async function* runCell(
  code: string,
  source: 'tool' | 'text',
  settings: StepSettings,
  context: StepContext,
): AsyncGenerator<AgentEvent, StepOutcome> {
  const { step, prose, usage } = context
  yield { type: 'code', step, code, source }
  const started = Date.now()
  // The guard reads Python only; other languages have the jail and the limits (language.ts).
  const violations = settings.check && (settings.language?.guarded ?? true) ? await settings.check(code) : []
  if (violations.length > 0) {
    yield { type: 'guard', step, violations }
    return {
      observation: `Nothing ran: the code breaks the sandbox's rules.\n${violations
        .map((v) => `- line ${v.line}, column ${v.column} [${v.rule}]: ${v.message}`)
        .join('\n')}`,
      record: { step, code, text: prose, artifacts: [], violations, durationMs: Date.now() - started, usage },
      ran: false,
      images: [],
    }
  }
  const queue = new EventQueue()
  const running = execute(code, settings, context, queue)
  yield* queue.drain(running)
  const { execution, imageNames } = await running
  for (const artifact of execution.artifacts) yield { type: 'artifact', step, artifact }
  const notes = context.repeats.notesFor(code, execution)
  return {
    observation: observe({ execution, imageNames, notes }),
    record: {
      step,
      code,
      text: prose,
      execution: execution.toJSON(),
      artifacts: execution.artifacts,
      durationMs: Date.now() - started,
      images: imageNames,
      usage,
    },
    ran: true,
    images: settings.vision ? imagesOf(execution) : [],
  }
}

/** Runs the cell in the sandbox; what it prints and shows reaches the queue as it comes. */
async function execute(
  code: string,
  settings: StepSettings,
  { step, signal }: StepContext,
  queue: EventQueue,
): Promise<{ execution: Execution; imageNames: string[] }> {
  const imageNames: string[] = []
  const execution = await settings.sandbox.runCode(code, {
    ...(settings.language && settings.language.language !== 'python'
      ? { language: settings.language.language }
      : {}),
    timeoutMs: settings.cellTimeoutMs,
    signal,
    onStdout: (message) => queue.push({ type: 'stdout', step, text: message.line }),
    onStderr: (message) => queue.push({ type: 'stderr', step, text: message.line }),
    onResult: (result) => {
      if ((result.png || result.jpeg || result.svg) && settings.nameImage) {
        imageNames.push(settings.nameImage(step, imageNames.length + 1))
      }
      queue.push({ type: 'result', step, result })
    },
    onError: (error) => queue.push({ type: 'error', step, error }),
  })
  settings.evidence.addExecution(execution)
  return { execution, imageNames }
}

function imagesOf(execution: Execution): ModelImage[] {
  return execution.results.flatMap((result): ModelImage[] => {
    if (result.png) return [{ data: result.png, mediaType: 'image/png' }]
    if (result.jpeg) return [{ data: result.jpeg, mediaType: 'image/jpeg' }]
    return []
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
