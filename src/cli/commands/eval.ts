/**
 * `analyst eval DIR`: a benchmark set (InfiAgent-DABench's shape) asked question by question, each
 * in its own session through the session service, scored the benchmark's way and kept in the
 * store, so that `--resume RUN_ID` continues a killed run; and `analyst eval compare A B`.
 * @module
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { basename, join, resolve } from 'node:path'
import pc from 'picocolors'
import type { AnalysisLanguage } from '../../agent/index.js'
import {
  buildReport,
  compareRuns,
  EvalProgress,
  type EvalQuestion,
  type EvalReport,
  type EvalSet,
  formatComparison,
  formatReport,
  loadEvalSet,
  RateGate,
  RecordedModel,
  readRecording,
  renderHtml,
  runEval,
  selectQuestions,
  storedResult,
  throttle,
} from '../../eval/index.js'
import { type CodeMode, type ModelChoice, modelTimeoutMs, resolveModel } from '../../models/index.js'
import { createProvider } from '../../providers.js'
import type { SandboxProvider } from '../../sandbox/index.js'
import { SessionService } from '../../session/index.js'
import type { Sources } from '../../sources/index.js'
import {
  type AuthStore,
  analystHome,
  type EvalStore,
  loadSessionHistory,
  openStores,
  type SessionHistory,
  type StoredEvalRun,
  type Stores,
  userOwner,
} from '../../store/index.js'
import { openTemplates } from '../../templates/store.js'
import { openDataSources, sourceArgs } from '../data-args.js'
import { UsageError } from '../errors.js'
import { modalToolSettings } from '../modal-tools.js'

export interface EvalOptions {
  /** The set's folder; optional with `resume` (the run remembers it). */
  dir?: string
  model?: string
  baseUrl?: string
  mode?: CodeMode
  /** --language: what the model writes (kept with the run). @default python */
  language?: AnalysisLanguage
  /** Questions asked at once. */
  concurrency: number
  limit?: number
  level?: string
  ids?: number[]
  /** @default 8 */
  maxSteps?: number
  /** Seconds per cell. @default 60 */
  timeout?: number
  /** --model-timeout in seconds. @default ANALYST_MODEL_TIMEOUT, else 120 */
  modelTimeout?: number
  /** Continue this run (its id or a unique prefix). */
  resume?: string
  /** Write results.json and report.html here. */
  out?: string
  json: boolean
  sandbox?: string
  /** The Jupyter engine's kernel name (--jupyter-kernel). */
  jupyterKernel?: string
  /** --template (ANALYST_TEMPLATE): the template every question's sandbox starts from. */
  template?: string
  /** --gpu and --image (the modal engine). */
  gpu?: string
  image?: string
  /** --modal-tool: functions deployed on Modal, offered to the model as tools (kept with the run). */
  modalTool?: string[]
  /** Recorded replies instead of a model (tests, benchmarks of the harness). */
  replay?: string
  /** --owner: the signed-in user (email or user:ID) whose run and sessions these are. */
  owner?: string
  /** --data: databases and data files every question's sql() may query (given again on --resume). */
  data?: string[]
  cwd: string
  env?: NodeJS.ProcessEnv
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
  /** A progress bar; default: whether stderr is a terminal. */
  interactive?: boolean
}

/** How a run asks its questions: kept with the run, so that a resumed run asks the same way. */
interface RunSettings {
  questionIds: number[]
  mode?: CodeMode
  language?: AnalysisLanguage
  maxSteps: number
  timeoutMs: number
  /** --modal-tool values. */
  modalTools?: string[]
  /** --owner: the user whose run and sessions these are (`user:<id>`). */
  owner?: string
}

const EXAMPLE = 'Example: analyst eval ../datasets/dabench --model openai:gpt-4.1-mini --concurrency 4'

interface Plan {
  run: StoredEvalRun
  set: EvalSet
  questions: EvalQuestion[]
  settings: RunSettings
  model: ModelChoice
}

async function chooseModel(
  options: EvalOptions,
  spec: string | undefined,
  questions: EvalQuestion[],
): Promise<ModelChoice> {
  if (options.replay) {
    const path = resolve(options.cwd, options.replay)
    const model = new RecordedModel(await readRecording(path), questions, basename(path))
    return {
      model,
      spec: `replay:${basename(path)}`,
      provider: 'custom',
      modelId: basename(path),
      mode: options.mode ?? 'tools',
    }
  }
  return resolveModel({ spec, baseUrl: options.baseUrl, env: options.env })
}

/** A new run from the options. */
async function newRun(evals: EvalStore, options: EvalOptions, owner: string | undefined): Promise<Plan> {
  if (!options.dir) throw new UsageError('Give the folder of a benchmark set', EXAMPLE)
  const set = await loadEvalSet(resolve(options.cwd, options.dir))
  const questions = selectQuestions(set, { ids: options.ids, level: options.level, limit: options.limit })
  const model = await chooseModel(options, options.model, set.questions)
  const settings: RunSettings = {
    questionIds: questions.map((q) => q.id),
    mode: options.mode,
    ...(options.language && options.language !== 'python' ? { language: options.language } : {}),
    maxSteps: options.maxSteps ?? 8,
    timeoutMs: (options.timeout ?? 60) * 1000,
    ...(options.modalTool?.length ? { modalTools: options.modalTool } : {}),
    ...(owner ? { owner } : {}),
  }
  const run = await evals.createEvalRun({
    dataset: set.dir,
    model: model.spec,
    settings: settings as unknown as Record<string, unknown>,
  })
  return { run, set, questions, settings, model }
}

/**
 * The owner `--owner` names: a user of `analyst serve` over the same store, by email (any case) or
 * as `user:<id>`, who has signed in there at least once.
 */
async function ownerNamed(auth: AuthStore, given: string): Promise<string> {
  const users = await auth.listUsers()
  const wanted = given.trim().toLowerCase()
  const user = users.find((u) => userOwner(u.id) === given.trim() || u.email?.toLowerCase() === wanted)
  if (!user) {
    throw new UsageError(
      `No user ${given} in this store`,
      'Give the email of someone who has signed in to analyst serve over this store (ANALYST_DATABASE_URL or ANALYST_HOME), or user:ID from its admin page.',
    )
  }
  if (user.disabled)
    throw new UsageError(`${given} is disabled`, 'An admin can enable them on the admin page.')
  return userOwner(user.id)
}

/** A stored run to continue: its set, questions, settings and model, as it began. */
async function resumedRun(evals: EvalStore, options: EvalOptions, prefix: string): Promise<Plan> {
  const id = await evals.resolveEvalRunId(prefix)
  const run = id ? await evals.getEvalRun(id) : undefined
  if (!run) {
    throw new UsageError(
      `No eval run ${prefix} (or the prefix fits several)`,
      'The run id is printed when an eval starts, and is in its --json output.',
    )
  }
  const changed = (
    [
      ['--ids', options.ids],
      ['--level', options.level],
      ['--limit', options.limit],
      ['--max-steps', options.maxSteps],
      ['--mode', options.mode],
      ['--language', options.language],
      ['--timeout', options.timeout],
      ['--modal-tool', options.modalTool],
      ['--owner', options.owner],
    ] as const
  ).filter(([, value]) => value !== undefined)
  if (changed.length > 0) {
    throw new UsageError(
      `A resumed run keeps the questions and settings it began with: leave out ${changed.map(([flag]) => flag).join(', ')}`,
      'Start a new run to change them.',
    )
  }
  const recorded = run.model.startsWith('replay:')
  if (recorded && !options.replay)
    throw new UsageError(`Run ${run.id} answered from recorded replies: pass --replay with the file again`)
  if (!recorded && options.replay)
    throw new UsageError(`Run ${run.id} was made with ${run.model}, not with recorded replies`)
  if (options.model && options.model !== run.model) {
    throw new UsageError(
      `Run ${run.id} was made with ${run.model}; it cannot continue with ${options.model}`,
      'Leave out --model to continue it, or start a new run.',
    )
  }
  const settings = run.settings as unknown as RunSettings
  const set = await loadEvalSet(options.dir ? resolve(options.cwd, options.dir) : run.dataset)
  const byId = new Map(set.questions.map((q) => [q.id, q]))
  const missing = settings.questionIds.filter((qid) => !byId.has(qid))
  if (missing.length > 0) {
    throw new UsageError(
      `The set in ${set.dir} lacks question(s) ${missing.slice(0, 10).join(', ')} of run ${run.id}`,
      `Give the folder the run began with: ${run.dataset}`,
    )
  }
  const questions = settings.questionIds.map((qid) => byId.get(qid) as EvalQuestion)
  const model = await chooseModel(options, run.model, set.questions)
  await evals.updateEvalRun(run.id, { status: 'running' })
  return { run, set, questions, settings, model }
}

/** results.json and report.html in the folder. */
async function writeOutputs(stores: Stores, report: EvalReport, set: EvalSet, folder: string) {
  await mkdir(folder, { recursive: true })
  const sessions = new Map<string, SessionHistory>()
  for (const result of report.results) {
    if (!result.sessionId) continue
    const history = await loadSessionHistory(stores.history, result.sessionId)
    if (history) sessions.set(result.sessionId, history)
  }
  const questions = new Map(set.questions.map((q) => [q.id, q]))
  await writeFile(join(folder, 'results.json'), `${JSON.stringify(report, null, 2)}\n`)
  await writeFile(join(folder, 'report.html'), renderHtml(report, { questions, sessions }))
}

/** `analyst eval DIR`: exit 0 when every question has its result, 130 when stopped (resume it). */
export async function evalCommand(options: EvalOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const stderr = options.stderr ?? process.stderr
  const interactive = options.interactive ?? Boolean((stderr as NodeJS.WriteStream).isTTY)
  const home = analystHome(options.env)
  const stores = await openStores(home, options.env)
  const stop = new AbortController()
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) return
    stderr.write(
      pc.yellow(`\n${signal}: stopping; the questions being answered will be asked again on resume.\n`),
    )
    stop.abort(new Error(`Stopped by ${signal}`))
  }
  let provider: SandboxProvider | undefined
  let service: SessionService | undefined
  let progress: EvalProgress | undefined
  let sources: Sources | undefined
  try {
    // Opened before the run is recorded: a wrong URL or password is said at once.
    sources = await openDataSources(sourceArgs(options.data ?? [], { cwd: options.cwd, env: options.env }), {
      home,
      stderr,
    })
    // For a new run, looked up before the run is recorded: a function not deployed is said at once.
    const fresh = options.resume ? undefined : await modalToolSettings(options.modalTool, options)
    const plan = options.resume
      ? await resumedRun(stores.evals, options, options.resume)
      : await newRun(
          stores.evals,
          options,
          options.owner ? await ownerNamed(stores.auth, options.owner) : undefined,
        )
    const { run, set, questions, settings } = plan
    const modal =
      fresh ?? (await modalToolSettings(settings.modalTools, { env: options.env, mode: settings.mode }))
    const answered = (await stores.evals.evalResults(run.id)).filter((row) => row.status === 'done').length
    const remaining = questions.length - answered
    const concurrency = Math.max(1, Math.min(options.concurrency, remaining))
    stderr.write(
      `Eval run ${pc.bold(run.id)}: ${questions.length} question(s) of ${set.name}${answered ? ` (${answered} answered before)` : ''} with ${plan.model.spec}, ${concurrency} at a time\n` +
        pc.dim(`(if it stops, continue it with: analyst eval --resume ${run.id.slice(0, 8)})\n`),
    )
    progress = new EvalProgress({ stream: stderr, interactive, quiet: options.json })
    const shown = progress
    const gate = new RateGate({ concurrency, onPause: (ms) => shown.paused(ms) })
    const model = { ...plan.model, model: throttle(plan.model.model, gate) }
    provider = await createProvider(options.sandbox, {
      env: options.env,
      poolSize: remaining > 0 ? concurrency : 0,
      jupyterKernel: options.jupyterKernel,
      gpu: options.gpu,
      image: options.image,
    })
    void provider.warm?.({ template: options.template })
    service = new SessionService({
      history: stores.history,
      blobs: stores.blobs,
      provider,
      sandbox: {
        ...(sources ? { sources } : {}),
        ...(options.template ? { template: options.template } : {}),
      },
      model: async () => model,
      analyst: {
        mode: settings.mode,
        language: settings.language,
        maxSteps: settings.maxSteps,
        ...modal,
        cellTimeoutMs: settings.timeoutMs,
        requestTimeoutMs: modelTimeoutMs(options.modelTimeout, options.env),
        stream: false,
      },
      cacheDir: join(home, 'cache'),
      templates: openTemplates(home),
      idleMs: 0,
    })
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
    const results = await runEval({
      service,
      evals: stores.evals,
      set,
      run,
      questions,
      concurrency,
      ...(settings.owner ? { owner: settings.owner } : {}),
      signal: stop.signal,
      onEvent: (event) => shown.handle(event),
    })
    progress.stop()
    const stored = (await stores.evals.getEvalRun(run.id)) ?? run
    const report = buildReport(stored, results, { planned: questions.length, rateLimits: gate.stats })
    await stores.evals.updateEvalRun(run.id, { status: report.status })
    if (options.out) {
      const folder = resolve(options.cwd, options.out)
      await writeOutputs(stores, report, set, folder)
      stderr.write(pc.dim(`Wrote ${join(folder, 'report.html')} and ${join(folder, 'results.json')}\n`))
    }
    stdout.write(options.json ? `${JSON.stringify(report)}\n` : formatReport(report))
    return report.status === 'done' ? 0 : 130
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    progress?.stop()
    await service?.shutdown()
    await provider?.close?.()
    await sources?.close()
    await stores.close()
  }
}

export interface CompareOptions {
  a: string
  b: string
  json: boolean
  env?: NodeJS.ProcessEnv
  stdout?: NodeJS.WritableStream
}

/** `analyst eval compare A B`: scores side by side, and which questions flipped. */
export async function compareCommand(options: CompareOptions): Promise<number> {
  const stores = await openStores(analystHome(options.env), options.env)
  try {
    const load = async (prefix: string) => {
      const id = await stores.evals.resolveEvalRunId(prefix)
      const run = id ? await stores.evals.getEvalRun(id) : undefined
      if (!run) {
        throw new UsageError(
          `No eval run ${prefix} (or the prefix fits several)`,
          'The run id is printed when an eval starts, and is in its --json output.',
        )
      }
      const rows = await stores.evals.evalResults(run.id)
      const results = rows.filter((row) => row.status === 'done').map((row) => storedResult(row.detail))
      return { runId: run.id, model: run.model, results }
    }
    const comparison = compareRuns(await load(options.a), await load(options.b))
    const stdout = options.stdout ?? process.stdout
    stdout.write(options.json ? `${JSON.stringify(comparison)}\n` : formatComparison(comparison))
    return 0
  } finally {
    await stores.close()
  }
}
