import { readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import pc from 'picocolors'
import type { AnalysisLanguage, AskResult } from '../../agent/index.js'
import { type CodeMode, type ModelChoice, modelTimeoutMs, resolveModel } from '../../models/index.js'
import { ScriptedModel, type ScriptStep } from '../../models/scripted.js'
import { sandboxResources } from '../../sandbox/kernel/limits.js'
import { SessionService } from '../../session/index.js'
import { openTemplates } from '../../templates/store.js'
import { openDataSources, splitDataArgs } from '../data-args.js'
import { UsageError } from '../errors.js'
import { openHome } from '../home.js'
import { modalToolSettings } from '../modal-tools.js'
import { OutputFolder } from '../outputs.js'
import { AnalysisRenderer, imageName } from '../render.js'

/** Options shared by `ask` and `chat`. */
export interface AnalysisOptions {
  data: string[]
  model?: string
  baseUrl?: string
  mode?: CodeMode
  maxSteps: number
  vision: boolean
  json: boolean
  /** Default: ./analyst-output/<session id> */
  outputDir?: string
  /** Per cell. */
  timeoutMs: number
  guard: boolean
  /** --language: what the model writes (python, r). @default python */
  language?: AnalysisLanguage
  stream: boolean
  /** --model-timeout in seconds. @default ANALYST_MODEL_TIMEOUT, else 120 */
  modelTimeout?: number
  isolation: 'sandbox' | 'none'
  /** --memory and --cpus: each sandbox's own limits. @default ANALYST_SANDBOX_MEMORY, ANALYST_SANDBOX_CPUS */
  memoryBytes?: number
  milliCpus?: number
  /** --template (ANALYST_TEMPLATE): the template each new session's sandbox starts from. */
  template?: string
  /** The engine (local, e2b, …). @default ANALYST_SANDBOX or local */
  sandbox?: string
  /** --jupyter-kernel */
  jupyterKernel?: string
  /** --gpu and --image (the modal engine) */
  gpu?: string
  image?: string
  /** --modal-tool: functions deployed on Modal, offered to the model as tools (APP/FUNCTION[=description]). */
  modalTool?: string[]
  /** Recorded replies to replay instead of a model (the demo). */
  replay?: string
  /** Continue this stored session (its id or a unique prefix). */
  session?: string
  cwd: string
  env?: NodeJS.ProcessEnv
  stdin?: NodeJS.ReadableStream
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
  /** Spinner and colors; default: whether stderr is a TTY. */
  interactive?: boolean
}

export interface AskOptions extends AnalysisOptions {
  question: string
}

async function chooseModel(options: AnalysisOptions): Promise<ModelChoice> {
  if (options.replay) {
    const path = resolve(options.cwd, options.replay)
    let script: ScriptStep[]
    try {
      script = JSON.parse(await readFile(path, 'utf8'))
    } catch (error) {
      throw new UsageError(
        `Cannot read the recorded replies in ${options.replay}: ${(error as Error).message}`,
      )
    }
    const model = new ScriptedModel(script, { provider: 'replay', modelId: options.replay })
    return {
      model,
      spec: `replay:${options.replay}`,
      provider: 'custom',
      modelId: options.replay,
      mode: options.mode ?? 'tools',
    }
  }
  return resolveModel({ spec: options.model, baseUrl: options.baseUrl, env: options.env })
}

export interface Analysis {
  sessionId: string
  service: SessionService
  folder: OutputFolder
  /** Runs one question through the renderer; resolves to its result. */
  ask(question: string): Promise<AskResult>
  close(): Promise<void>
}

/**
 * The session service over the history in ANALYST_HOME, one sandbox engine and the model, and the
 * session to ask in (a stored one with --session, else a new one with the --data files).
 */
export async function startAnalysis(options: AnalysisOptions): Promise<Analysis> {
  const stdout = options.stdout ?? process.stdout
  const stderr = options.stderr ?? process.stderr
  const interactive = options.interactive ?? Boolean((stderr as NodeJS.WriteStream).isTTY)
  // Looked up before anything else starts: a function that is not deployed is said at once.
  const modal = await modalToolSettings(options.modalTool, options)
  const given = await splitDataArgs(options.data, { cwd: options.cwd, env: options.env })
  // Each source connects once now: a wrong URL or password is said before any model call.
  const sources = await openDataSources(given.sources, { stderr })
  const { home, stores, provider } = await openHome(options).catch(async (error: unknown) => {
    await sources?.close()
    throw error
  })
  const service = new SessionService({
    history: stores.history,
    blobs: stores.blobs,
    provider,
    sandbox: {
      isolation: options.isolation,
      sources,
      limits: sandboxResources(options, options.env),
      template: options.template,
    },
    // Chosen below, before anything is recorded: a missing model fails first.
    model: async () => model,
    analyst: {
      mode: options.mode,
      guard: options.guard,
      language: options.language,
      maxSteps: options.maxSteps,
      vision: options.vision,
      cellTimeoutMs: options.timeoutMs,
      stream: options.stream,
      requestTimeoutMs: modelTimeoutMs(options.modelTimeout, options.env),
      nameImage: imageName,
      ...modal,
    },
    cacheDir: join(home, 'cache'),
    templates: openTemplates(home),
    idleMs: 0,
  })
  let model: ModelChoice
  const close = async () => {
    await service.shutdown()
    await provider.close?.()
    await stores.close()
    await sources?.close()
  }
  try {
    let sessionId: string | undefined
    if (options.session) {
      sessionId = await service.resolveId(options.session).catch(() => {
        throw new UsageError(
          `No session ${options.session} in the history (or the prefix fits several)`,
          'List sessions with: analyst history',
        )
      })
    } else if (options.data.length === 0) {
      throw new UsageError(
        'Give at least one data file or database with --data',
        'Example: --data orders.csv, or --data postgres://analyst@localhost/shop (repeat --data for more)',
      )
    }
    // A stored session keeps its model unless --model says otherwise.
    const session = sessionId ? await service.getSession(sessionId) : undefined
    model = await chooseModel({ ...options, model: options.model ?? session?.model })
    // A session keeps the language and template it was made in; a flag that differs is said, not obeyed.
    if (session && !options.json) {
      const kept = [
        options.language && session.language && options.language !== session.language
          ? `its language, ${session.language} (not --language ${options.language})`
          : '',
        options.template && session.language && options.template !== session.template
          ? `its template, ${session.template ?? "the engine's own"} (not --template ${options.template})`
          : '',
      ].filter(Boolean)
      if (kept.length > 0)
        stderr.write(pc.yellow(`Analyst · session ${session.id.slice(0, 8)} keeps ${kept.join(' and ')}\n`))
    }
    if (options.replay && !options.json)
      stderr.write(pc.yellow('Analyst · recorded replies, replayed: no model is called\n'))
    sessionId ??= (await service.createSession()).id
    if (given.files.length > 0) {
      if (!options.json) stderr.write(pc.dim(`Analyst · reading ${given.files.length} data file(s)…\n`))
      await service.addData(
        sessionId,
        given.files.map((path) => ({ path: resolve(options.cwd, path) })),
      )
    }
    const folder = new OutputFolder(
      resolve(options.cwd, options.outputDir ?? join('analyst-output', sessionId)),
    )
    const ask = async (question: string): Promise<AskResult> => {
      const renderer = new AnalysisRenderer({
        stdout,
        stderr,
        folder,
        readFile: (path) => service.readFile(sessionId, path),
        interactive,
        print: !options.json,
      })
      let result: AskResult | undefined
      try {
        const asking = service.ask(sessionId, question)
        for (let next = await asking.next(); ; next = await asking.next()) {
          if (next.done) {
            result = next.value
            break
          }
          await renderer.handle(next.value)
        }
      } finally {
        renderer.close()
      }
      const artifacts = result.artifacts.map((artifact) => ({
        ...artifact,
        savedPath: renderer.saved.get(artifact.name),
      }))
      const withPaths = { ...result, artifacts }
      if (options.json) stdout.write(`${JSON.stringify(withPaths)}\n`)
      return withPaths
    }
    return { sessionId, service, folder, ask, close }
  } catch (error) {
    await close()
    throw error
  }
}

/** `analyst ask`: exit 0 with an answer, 1 when the step cap ended it without one. */
export async function ask(options: AskOptions): Promise<number> {
  if (!options.question.trim())
    throw new UsageError(
      'The question is empty',
      'Example: analyst ask "What is the average order value?" --data orders.csv',
    )
  const analysis = await startAnalysis(options)
  try {
    const result = await analysis.ask(options.question)
    return result.incomplete ? 1 : 0
  } finally {
    await analysis.close()
  }
}
