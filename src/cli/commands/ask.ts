import { readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import pc from 'picocolors'
import { type AnalystSession, type AskResult, openAnalysis } from '../../agent/index.js'
import type { OpenedAnalysis } from '../../agent/open.js'
import { type CodeMode, type ModelChoice, resolveModel } from '../../models/index.js'
import { ScriptedModel, type ScriptStep } from '../../models/scripted.js'
import { LocalProvider } from '../../sandbox/local/index.js'
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
  /** Recorded replies to replay instead of a model (the demo). */
  replay?: string
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

/** Model, data, sandbox and terminal view, ready for questions. */
export async function startAnalysis(options: AnalysisOptions): Promise<Analysis> {
  const stdout = options.stdout ?? process.stdout
  const stderr = options.stderr ?? process.stderr
  const interactive = options.interactive ?? Boolean((stderr as NodeJS.WriteStream).isTTY)
  const model = await chooseModel(options)
  const data = options.data.map((path) => resolve(options.cwd, path))
  if (!options.json) {
    const replaying = options.replay ? pc.yellow(' (recorded replies, replayed: no model is called)') : ''
    stderr.write(
      pc.dim(`Analyst · model ${model.spec}${replaying} · preparing ${data.length} data file(s)…\n`),
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
    sandbox: { provider: new LocalProvider({ poolSize: 0 }), isolation: options.isolation },
  })
  const session = opened.session
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
    let result: AskResult | undefined
    try {
      for await (const event of session.ask(question)) {
        await renderer.handle(event)
        if (event.type === 'done') result = event.result
      }
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
  return { opened, session, model, folder, ask, close: () => opened.close() }
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
