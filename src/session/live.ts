/**
 * A live session: a session whose sandbox and analyst are open in this process. Opened from the
 * store alone: its data files from the blob store, its kernel's state rebuilt by re-running the
 * cells that succeeded, the conversation as the model saw it.
 * @module
 */
import { buffer } from 'node:stream/consumers'
import type { ModelMessage } from 'ai'
import {
  type AnalysisLanguage,
  Analyst,
  type AnalystOptions,
  type CodeCheck,
  languageProfile,
  sourcesSection,
} from '../agent/index.js'
import { formatProfiles } from '../data/index.js'
import { NotFoundError } from '../errors.js'
import { checkCode, warmUp } from '../guard/index.js'
import type { CodeMode, ModelChoice } from '../models/index.js'
import type { FindPython } from '../python.js'
import {
  describeSources,
  type QueryHost,
  Sandbox,
  type SandboxCreateOptions,
  type SandboxLimits,
  type SandboxProvider,
} from '../sandbox/index.js'
import type { BlobStore, HistoryStore, StoredDataset } from '../store/index.js'
import { type HostTable, hostTables, type SandboxDataFile, sandboxFiles } from './datasets.js'
import { sessionLanguage, sessionLimits, sessionTemplate, type TemplateCatalog } from './environment.js'
import type { Replayed } from './events.js'
import { tablesReplayed } from './frames.js'

/** How each session's analyst works: the agent's settings that a door chooses. */
export type AnalystSettings = Partial<
  Pick<
    AnalystOptions,
    | 'maxSteps'
    | 'vision'
    | 'cellTimeoutMs'
    | 'requestTimeoutMs'
    | 'maxRetries'
    | 'stream'
    | 'nameImage'
    | 'tools'
    | 'language'
  >
> & {
  /** Overrides the model's default mode. */
  mode?: CodeMode
  /** Apply the static guard to the model's code. @default true */
  guard?: boolean
}

/**
 * The host's sources that sessions pick by name (`analyst serve`'s ANALYST_SOURCES and --data):
 * a session keeps the names, and each time it opens, its own connections to them.
 */
/** Who makes or continues a session, as the sources judge it: its owner, and a signed-in user's groups and email. */
export interface SourcesCaller {
  owner: string | null
  groups?: readonly string[]
  email?: string
}

export interface SessionSources {
  /** The names a new session of `caller` gets: those asked for once checked, or the defaults. */
  choose(names: readonly string[] | undefined, caller: SourcesCaller): string[]
  /** The sources `caller` may use. */
  available(caller: SourcesCaller): { name: string }[]
  /** Connects to these sources for one live session; closed with it. */
  open(names: readonly string[]): Promise<QueryHost & { close(): Promise<void> }>
}

/**
 * Data files too large for the sandbox (serve's uploads over ANALYST_SQL_ONLY_BYTES): they stay on
 * the host as SQL tables that the code queries with sql().
 */
export interface LargeFiles {
  /** Files over this size stay on the host. */
  overBytes: number
  /** The SQL table a file of this name is; undefined when DuckDB cannot read it (not CSV, TSV, Parquet, NDJSON). */
  tableFor(name: string): string | undefined
  /** Connects to a session's named sources (maybe none) and its large files, as one host. */
  open(
    names: readonly string[],
    tables: readonly HostTable[],
  ): Promise<QueryHost & { close(): Promise<void> }>
}

/** What opening a session needs: the stores, the one provider, and how sessions are set up. */
export interface LiveContext {
  history: HistoryStore
  blobs: BlobStore
  provider: SandboxProvider
  sandbox: Omit<SandboxCreateOptions, 'data' | 'signal'>
  /** Each sandbox's limits under its template's and `sandbox.limits` (SessionServiceOptions). */
  defaultLimits?: Partial<SandboxLimits>
  analyst: AnalystSettings
  python?: FindPython
  cacheDir: string
  /** The sources sessions pick by name, if the door offers some. */
  sources?: SessionSources
  /** Where data files too large for the sandbox go, if the door keeps them on the host. */
  largeFiles?: LargeFiles
  /** Where the build a session was made in is found by its id. */
  templates?: TemplateCatalog
}

/**
 * The sources a session named when it was made, and its data files too large for the sandbox,
 * connected again; undefined when it has neither.
 */
async function openSessionSources(
  context: LiveContext,
  names: readonly string[] | undefined,
  tables: readonly HostTable[],
): Promise<(QueryHost & { close(): Promise<void> }) | undefined> {
  if (tables.length > 0) {
    if (!context.largeFiles) {
      throw new NotFoundError(
        'The session has data files kept on the host for sql(), which this door cannot query',
        {
          hint: 'Open the session with analyst serve, where it was made.',
        },
      )
    }
    return context.largeFiles.open(names ?? [], tables)
  }
  if (!names?.length) return undefined
  if (!context.sources) {
    throw new NotFoundError(
      `The session queries the sources ${names.join(', ')}, which this server does not offer`,
      {
        hint: 'Start the server with the same ANALYST_SOURCES (or --data) as when the session was made.',
      },
    )
  }
  return context.sources.open(names)
}

/** The prompt's text on the session's data: its files' profiles (read in its language), and the host's sources if it has some. */
function describeData(
  profiles: StoredDataset['profile'][],
  sourcesText: string | undefined,
  language: AnalysisLanguage | undefined,
): string {
  const files =
    profiles.length > 0
      ? formatProfiles(profiles, { language: language ?? 'python' })
      : sourcesText
        ? '(no files were given)'
        : ''
  return [files, sourcesText].filter(Boolean).join('\n\n')
}

/** The sources' part of the prompt, for the question when there is one; none without sources. */
async function describeSessionSources(
  sources: QueryHost | undefined,
  question?: string,
  language?: AnalysisLanguage,
): Promise<string | undefined> {
  if (!sources || sources.sources.length === 0) return undefined
  return sourcesSection(await describeSources(sources, question), language)
}

/** runCode's option for the session's language: Python's cells run in the default context. */
function inLanguage(language: AnalysisLanguage | undefined): { language?: AnalysisLanguage } {
  return language && language !== 'python' ? { language } : {}
}

export class LiveSession {
  idleTimer: NodeJS.Timeout | undefined
  private profiles: StoredDataset['profile'][]

  private constructor(
    readonly sessionId: string,
    readonly sandbox: Sandbox,
    readonly analyst: Analyst,
    readonly model: ModelChoice,
    readonly replayed: Replayed,
    profiles: StoredDataset['profile'][],
    /** The guard, when it is on. */
    readonly check: CodeCheck | undefined,
    /** The session's own connections to its sources, closed with it. */
    private readonly sources: { close(): Promise<void> } | undefined,
    /** The sources the session's code queries (its own, or the door's). */
    private readonly host: QueryHost | undefined,
    /** The prompt's text on the sources, kept when files are added. */
    private sourcesText: string | undefined,
    /** The language its cells are in. */
    readonly language: AnalysisLanguage | undefined,
  ) {
    this.profiles = profiles
  }

  /** runCode's option for the session's language. */
  get runOptions(): { language?: AnalysisLanguage } {
    return inLanguage(this.language)
  }

  /** Opens the session from the store: data, sandbox, replayed cells, conversation. */
  static async open(
    context: LiveContext,
    sessionId: string,
    model: ModelChoice,
    signal?: AbortSignal,
  ): Promise<LiveSession> {
    const { history } = context
    // One snapshot: the conversation and the cells replayed for it agree, over one connection.
    const [session, datasets, messages, steps] = await history.snapshot((at) =>
      Promise.all([
        at.getSession(sessionId),
        at.datasets(sessionId),
        at.messages(sessionId),
        at.steps(sessionId),
      ]),
    )
    // The session's own language and build, whatever the door's are now: its cells replay there.
    const language = sessionLanguage(session, context.analyst.language)
    // A session that predates these records (no language kept) starts in the door's template.
    const { template: doorTemplate, limits: doorLimits, ...sandboxSettings } = context.sandbox
    // Built on another replica: brought here first.
    const recorded = session?.templateId ?? session?.template
    if (recorded) await context.templates?.ensure?.(recorded)
    const template = sessionTemplate(session, context) ?? (session?.language ? undefined : doorTemplate)
    const limits = sessionLimits(template, doorLimits, context.defaultLimits, context)
    const settings = { ...context.analyst, language }
    // The guard reads Python; an R session has the jail and the limits (agent/language.ts).
    const guard = settings.guard !== false && languageProfile(language).guarded
    // The parser loads while the sandbox starts, not during the first step.
    const guardReady = guard ? warmUp().catch(() => {}) : undefined
    const files = await sandboxFiles(datasets, {
      blobs: context.blobs,
      cacheDir: context.cacheDir,
      python: context.python,
      signal,
      upgraded: (dataset) => history.putDataset(sessionId, dataset),
    })
    // Its own sources (with its files too large for the sandbox), else the door's (the CLI's
    // --data), else none.
    const tables = await hostTables(datasets, context)
    const own = await openSessionSources(context, session?.sources, tables)
    const sources = own ?? context.sandbox.sources
    let sandbox: Sandbox
    try {
      sandbox = await Sandbox.create({
        ...sandboxSettings,
        ...(limits ? { limits } : {}),
        ...(template ? { template } : {}),
        ...(sources ? { sources } : {}),
        provider: context.provider,
        data: files.map((file) => ({ path: file.path, name: file.name })),
        signal,
      })
    } catch (error) {
      await own?.close()
      throw error
    }
    const replayed = { ran: 0, failed: 0 }
    try {
      // A tool call ran outside the sandbox: what it left there are its files, written back in turn.
      const toolFiles = steps.some((step) => step.tool) ? await history.artifacts(sessionId) : []
      for (const step of steps) {
        if (!step.success) {
          // Not replayed: its tables are not made again (a grid of one says why).
          tablesReplayed(sandbox, step.results, undefined)
          continue
        }
        if (step.tool) {
          for (const artifact of toolFiles.filter((a) => a.stepId === step.id && a.kind === 'file')) {
            const content = await context.blobs.get(artifact.sha256)
            if (content) await sandbox.files.write(artifact.name, await buffer(content))
          }
          continue
        }
        const execution = await sandbox.runCode(step.code, {
          timeoutMs: 300_000,
          signal,
          ...inLanguage(settings.language),
        })
        replayed.ran++
        if (execution.error) replayed.failed++
        tablesReplayed(sandbox, step.results, execution)
      }
    } catch (error) {
      await sandbox.kill()
      await own?.close()
      throw error
    }
    const profiles = files.map((file) => file.profile)
    const sourcesText = await describeSessionSources(sources, undefined, settings.language)
    const { guard: _guard, mode, ...agent } = settings
    // A sandbox with network may use it: the guard is told so.
    const check: CodeCheck | undefined = guard
      ? (code) => checkCode(code, { allowNetwork: context.sandbox.network === true })
      : undefined
    const analyst = new Analyst({
      ...agent,
      model: model.model,
      modelName: model.spec,
      mode: mode ?? model.mode,
      sandbox,
      sessionId,
      dataDescription: describeData(profiles, sourcesText, language),
      history: messages as ModelMessage[],
      evidence: steps.flatMap((step) => [step.stdout, ...step.results.map((result) => result.text ?? '')]),
      check,
    })
    await guardReady
    return new LiveSession(
      sessionId,
      sandbox,
      analyst,
      model,
      replayed,
      profiles,
      check,
      own,
      sources,
      sourcesText,
      settings.language,
    )
  }

  /** Files just added to the session: readable by its code now, and described in the next prompt. */
  async addData(files: SandboxDataFile[]) {
    for (const file of files) {
      await this.sandbox.files.addData(file.path, file.name)
      this.profiles = [...this.profiles.filter((p) => p.name !== file.name), file.profile]
    }
    this.analyst.setDataDescription(describeData(this.profiles, this.sourcesText, this.language))
  }

  /**
   * The sources described for this question: a schema over the prompt's budget gives in full the
   * tables that best match it, and the rest by name (the catalog is cached: no round trip each
   * time). A source that cannot be described now keeps the description it had.
   */
  async describeFor(question: string) {
    const text = await describeSessionSources(this.host, question, this.language).catch(
      () => this.sourcesText,
    )
    if (text === this.sourcesText) return
    this.sourcesText = text
    this.analyst.setDataDescription(describeData(this.profiles, text, this.language))
  }

  async close(): Promise<void> {
    clearTimeout(this.idleTimer)
    try {
      await this.sandbox.kill()
    } finally {
      await this.sources?.close()
    }
  }
}
