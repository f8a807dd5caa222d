import { readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import pc from 'picocolors'
import { type AnalystSession, type AskResult, openAnalysis } from '../../agent/index.js'
import type { OpenedAnalysis } from '../../agent/open.js'
import { type CodeMode, type ModelChoice, resolveModel } from '../../models/index.js'
import { ScriptedModel, type ScriptStep } from '../../models/scripted.js'
import { createProvider } from '../../providers.js'
import { Recorder } from '../../store/recorder.js'
import { loadHistory, type StoredHistory } from '../../store/resume.js'
import { analystHome, Store } from '../../store/store.js'
import { UsageError } from '../errors.js'
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
  stream: boolean
  isolation: 'sandbox' | 'none'
  /** The engine (local, e2b, …). @default ANALYST_SANDBOX or local */
  sandbox?: string
  /** --jupyter-kernel */
  jupyterKernel?: string
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
  opened: OpenedAnalysis
  session: AnalystSession
  model: ModelChoice
  folder: OutputFolder
  /** Runs one question through the renderer; resolves to its result. */
  ask(question: string): Promise<AskResult>
  close(): Promise<void>
}

/** Model, data, sandbox, history and terminal view, ready for questions. */
export async function startAnalysis(options: AnalysisOptions): Promise<Analysis> {
  const stdout = options.stdout ?? process.stdout
  const stderr = options.stderr ?? process.stderr
  const interactive = options.interactive ?? Boolean((stderr as NodeJS.WriteStream).isTTY)
  const store = Store.open(analystHome(options.env))
  try {
    let history: StoredHistory | undefined
    let sessionId: string | undefined
    if (options.session) {
      sessionId = store.resolveId(options.session)
      if (!sessionId) {
        throw new UsageError(
          `No session ${options.session} in the history`,
          'List sessions with: analyst history',
        )
      }
      try {
        history = loadHistory(store, sessionId)
      } catch (error) {
        throw new UsageError(
          (error as Error).message,
          'Pass the file again with --data, or start a new session.',
        )
      }
    }
    if (!history && options.data.length === 0) {
      throw new UsageError(
        'Give at least one data file with --data',
        'Example: --data orders.csv (repeat --data for more files)',
      )
    }
    const model = await chooseModel({ ...options, model: options.model ?? history?.model })
    const data = [...(history?.data ?? []), ...options.data.map((path) => resolve(options.cwd, path))]
    if (!options.json) {
      const replaying = options.replay ? pc.yellow(' (recorded replies, replayed: no model is called)') : ''
      const continuing = history
        ? ` · continuing session ${sessionId} (re-running ${history.cells.length} cells)`
        : ''
      stderr.write(
        pc.dim(
          `Analyst · model ${model.spec}${replaying}${continuing} · preparing ${data.length} data file(s)…\n`,
        ),
      )
    }
    const opened = await openAnalysis({
      model,
      mode: options.mode,
      data,
      guard: options.guard,
      maxSteps: options.maxSteps,
      vision: options.vision,
      cellTimeoutMs: options.timeoutMs,
      stream: options.stream,
      nameImage: imageName,
      sessionId,
      history: history?.messages,
      evidence: history?.evidence,
      replay: history?.cells,
      sandbox: {
        provider: await createProvider(options.sandbox, {
          env: options.env,
          poolSize: 0,
          jupyterKernel: options.jupyterKernel,
        }),
        isolation: options.isolation,
      },
    })
    const session = opened.session
    if (!history) store.createSession({ id: session.sessionId, title: 'New session', model: model.spec })
    const known = new Set(store.datasets(session.sessionId).map((dataset) => dataset.name))
    opened.profiles.forEach((profile) => {
      if (!known.has(profile.name)) {
        store.addDataset(session.sessionId, {
          name: profile.name,
          sourcePath: profile.path,
          bytes: profile.bytes,
          profile,
        })
      }
    })
    if (history && opened.replayed.failed > 0 && !options.json) {
      stderr.write(
        pc.yellow(
          `${opened.replayed.failed} of ${opened.replayed.ran} earlier cells failed when re-run; some variables may be missing.\n`,
        ),
      )
    }
    const recorder = new Recorder(store, session, opened.sandbox)
    const folder = new OutputFolder(
      resolve(options.cwd, options.outputDir ?? join('analyst-output', session.sessionId)),
    )
    const ask = async (question: string): Promise<AskResult> => {
      const renderer = new AnalysisRenderer({
        stdout,
        stderr,
        folder,
        sandbox: opened.sandbox,
        interactive,
        print: !options.json,
      })
      if (store.summary(session.sessionId)?.title === 'New session') {
        store.updateSession(session.sessionId, { title: question.slice(0, 120) })
      }
      recorder.start(question)
      let result: AskResult | undefined
      try {
        for await (const event of session.ask(question)) {
          await recorder.handle(event)
          await renderer.handle(event)
          if (event.type === 'done') result = event.result
        }
      } catch (error) {
        recorder.fail(error)
        throw error
      } finally {
        renderer.close()
      }
      if (!result) throw new Error('the analysis ended without a result')
      const artifacts = result.artifacts.map((artifact) => ({
        ...artifact,
        savedPath: renderer.saved.get(artifact.name),
      }))
      const withPaths = { ...result, artifacts }
      if (options.json) stdout.write(`${JSON.stringify(withPaths)}\n`)
      return withPaths
    }
    const close = async () => {
      await opened.close()
      store.close()
    }
    return { opened, session, model, folder, ask, close }
  } catch (error) {
    store.close()
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
