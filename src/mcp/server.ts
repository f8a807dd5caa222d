/**
 * One MCP connection over one Analyst session: the tools (`run_python`, `list_data`,
 * `profile_data`, `add_data`, `ask_analyst`) and the session's artifacts as resources, all through
 * the session service, so the session is recorded, resumed and exported like any other.
 * Transport-agnostic: stdio (`analyst mcp`) and Streamable HTTP (`/mcp` on `analyst serve`) connect
 * the same server.
 * @module
 */
import { createRequire } from 'node:module'
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { CallToolResult, ServerNotification } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import { type DatasetProfile, formatProfiles } from '../data/index.js'
import { NotFoundError } from '../errors.js'
import { RUN_PYTHON_DESCRIPTION } from '../integrations/cell.js'
import type { QuerySourceInfo } from '../sandbox/query.js'
import type { SessionEvent, SessionService, SignedInUser } from '../session/index.js'
import { answerContent, cellContent, errorContent } from './content.js'
import type { AllowedFolders } from './folders.js'
import { keepToSpec } from './protocol.js'
import { ARTIFACT_TEMPLATE, artifactResources, readArtifact } from './resources.js'

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string }

/** The title of an MCP session until the client says its name. */
export const MCP_TITLE = 'MCP session'

export interface McpConnectionOptions {
  service: SessionService
  /** The connection's session (made with `McpConnection.open`). */
  sessionId: string
  /** Who the session belongs to (a token's hash over HTTP); null on this machine. */
  owner?: string | null
  /** The signed-in user behind `owner` (their groups say which of the host's sources they may use). */
  user?: SignedInUser
  /** Where `add_data` may take files from. */
  folders: AllowedFolders
  /** Another way to add data, told to the client's model (over HTTP: an upload). */
  uploadHint?: string
  /** How often a long `ask_analyst` reports that it is still working. @default 15 s */
  heartbeatMs?: number
  /** The host's sources that the session's sql() queries (databases, large files), if any. */
  sources?: McpSources
}

/** What list_data and profile_data need of the sources: names, and descriptions (src/sources). */
export interface McpSources {
  readonly sources: readonly QuerySourceInfo[]
  describe(options: { budgetChars: number; question?: string }): Promise<string>
  /** Every table of one source (or of all) in full. */
  describeAll(source?: string): Promise<string>
  describeTable(table: string, source?: string): Promise<string>
}

/** How much of the sources list_data describes; profile_data gives the rest. */
const LIST_BUDGET_CHARS = 4_000

/** Extra of a request handler: the parts used here. */
interface RequestExtra {
  signal: AbortSignal
  _meta?: { progressToken?: string | number }
  sendNotification: (notification: ServerNotification) => Promise<void>
}

const INSTRUCTIONS = `Analyst runs Python for data analysis in an isolated sandbox: a stateful kernel (variables persist between calls) with pandas, numpy and matplotlib, no network, and the session's data files read-only at data/<name>.
Start with list_data (and profile_data for a file's columns), then run_python. Charts come back as images; files the code saves in its working directory become resources (analyst://sessions/<id>/artifacts/<name>).
ask_analyst hands a whole question to Analyst's own model instead (slower; it sees the cells run so far).`

const SOURCES_INSTRUCTIONS = `
This session also has data sources on the host (databases, large files), listed by list_data: in run_python, sql(query, source=None, params=None) runs one read-only SQL statement and returns a pandas DataFrame, and describe_table(name) describes a table. Aggregate in SQL and pull small results into pandas: a result is cut at a row and byte cap.`

export class McpConnection {
  readonly server: McpServer
  private running = 0
  private cells = 0
  private user: SignedInUser | undefined

  constructor(private readonly options: McpConnectionOptions) {
    this.user = options.user
    const instructions = options.sources?.sources.length ? INSTRUCTIONS + SOURCES_INSTRUCTIONS : INSTRUCTIONS
    this.server = new McpServer({ name: 'analyst', version }, { instructions })
    this.registerTools()
    const artifacts = this.registerResources()
    keepToSpec(this.server.server, { isResourceUri: (uri) => artifacts.uriTemplate.match(uri.href) !== null })
    // The session is named after the client once it says who it is.
    this.server.server.oninitialized = () => {
      const client = this.server.server.getClientVersion()?.name
      if (client)
        void options.service.history
          .updateSession(options.sessionId, { title: `${MCP_TITLE} (${client.slice(0, 80)})` })
          .catch(() => {})
    }
  }

  /** Opens a new session for a connection, with data files on this machine. */
  static async open(
    service: SessionService,
    options: Omit<McpConnectionOptions, 'service' | 'sessionId'> & {
      data?: string[]
      /** The host's sources the session picks by name, checked for the caller; left out, the defaults. */
      sourceNames?: string[]
      /** What list_data says of the sources the session got, when `sources` is not given. */
      describeSources?: (names: readonly string[]) => McpSources | undefined
    },
  ): Promise<McpConnection> {
    const { data, sourceNames, describeSources, ...rest } = options
    const session = await service.createSession({
      title: MCP_TITLE,
      owner: options.owner,
      ...(options.user ? { user: options.user } : {}),
      ...(sourceNames ? { sources: sourceNames } : {}),
    })
    const sources =
      options.sources ?? (session.sources?.length ? describeSources?.(session.sources) : undefined)
    const connection = new McpConnection({
      ...rest,
      ...(sources ? { sources } : {}),
      service,
      sessionId: session.id,
    })
    try {
      if (data?.length)
        await service.addData(
          session.id,
          data.map((path) => ({ path })),
          { owner: options.owner },
        )
    } catch (error) {
      await service.deleteSession(session.id, options.owner)
      throw error
    }
    return connection
  }

  /**
   * The signed-in user behind the latest request: their groups may have changed since the session
   * began (a new sign-in), and the sources they may query with them.
   */
  actFor(user: SignedInUser | undefined): void {
    this.user = user
  }

  private caller(): { user?: SignedInUser } {
    return this.user ? { user: this.user } : {}
  }

  get sessionId(): string {
    return this.options.sessionId
  }

  /** Tool calls being answered now. */
  get busy(): number {
    return this.running
  }

  /**
   * Ends the session's part in this process: its sandbox stops. A session that ran nothing (a
   * client that connected and left) leaves no record behind.
   */
  async end(): Promise<void> {
    const { service, sessionId, owner } = this.options
    await service.close(sessionId)
    const runs = await service.history.runs(sessionId).catch(() => undefined)
    if (runs?.length === 0) await service.deleteSession(sessionId, owner).catch(() => {})
  }

  /** A file's profile as the session's language reads it (an R session's in readr's terms). */
  private async profileText(profile: DatasetProfile): Promise<string> {
    const session = await this.options.service.history.getSession(this.options.sessionId)
    return formatProfiles([profile], { language: session?.language === 'r' ? 'r' : 'python' })
  }

  /** Runs a tool's work, answering any error as a tool error (none when the client cancelled). */
  private async call(extra: RequestExtra, work: () => Promise<CallToolResult>): Promise<CallToolResult> {
    this.running++
    try {
      return await work()
    } catch (error) {
      if (extra.signal.aborted) return { content: [{ type: 'text', text: 'Cancelled.' }], isError: true }
      return errorContent(error)
    } finally {
      this.running--
    }
  }

  private registerTools() {
    const { service, sessionId, owner, folders, sources } = this.options

    this.server.registerTool(
      'run_python',
      {
        title: 'Run Python',
        description: RUN_PYTHON_DESCRIPTION,
        inputSchema: {
          code: z.string().min(1).describe('The Python code to run, as one cell'),
          timeout_ms: z
            .number()
            .int()
            .min(1)
            .max(30 * 60_000)
            .optional()
            .describe('Time limit for this cell in milliseconds (default 60000); the kernel keeps its state'),
        },
        annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
      },
      ({ code, timeout_ms }, extra) =>
        this.call(extra, async () => {
          const cell = ++this.cells
          const imageNames: string[] = []
          const result = await service.runCell(sessionId, code, {
            owner,
            ...this.caller(),
            signal: extra.signal,
            timeoutMs: timeout_ms,
            label: 'run_python',
            nameImage: (index) => {
              const name = `cell-${cell}-chart-${index}.png`
              imageNames.push(name)
              return name
            },
          })
          if (imageNames.length > 0 || (result.execution?.artifacts.length ?? 0) > 0)
            this.server.sendResourceListChanged()
          return cellContent(result, { sessionId, imageNames })
        }),
    )

    this.server.registerTool(
      'list_data',
      {
        title: 'List data files and sources',
        description:
          "List the data files this session's code can read (at data/<name>), with their format, size, rows and columns" +
          (folders.dirs.length > 0 ? ', the files that add_data can add' : '') +
          (sources?.sources.length ? ', and the sources sql() queries, with their tables' : '') +
          '.',
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      (extra) =>
        this.call(extra, async () => {
          const datasets = await service.history.datasets(sessionId)
          const lines = datasets.map(({ profile }) => {
            const size = `${profile.rows}${profile.rowsEstimated ? ' (estimated)' : ''} rows × ${profile.columns.length} columns`
            return `data/${profile.name}  ${profile.format}, ${profile.bytes} bytes, ${size}: ${profile.columns.map((c) => c.name).join(', ')}`
          })
          const parts = [lines.length > 0 ? lines.join('\n') : 'No data files yet.']
          if (sources?.sources.length) {
            const described = await sources.describe({ budgetChars: LIST_BUDGET_CHARS })
            parts.push(
              `Sources that sql() queries in run_python (profile_data gives a source or a table in full):\n${described}`,
            )
          }
          const addable = await folders.dataFiles()
          if (addable.length > 0) parts.push(`Files add_data can add:\n${addable.join('\n')}`)
          else if (this.options.uploadHint) parts.push(this.options.uploadHint)
          return { content: [{ type: 'text', text: parts.join('\n\n') }] }
        }),
    )

    this.server.registerTool(
      'profile_data',
      {
        title: 'Profile a data file or source',
        description:
          'Describe one data file as pandas will read it: the call that reads it, its columns with types, nulls, ranges and sample values, and warnings.' +
          (sources?.sources.length
            ? ' Or a source that sql() queries, by its name: every table with columns, types, keys, row estimates, samples and comments; or one table of a source, by its name.'
            : ''),
        inputSchema: {
          name: z
            .string()
            .min(1)
            .describe('The file name, as list_data shows it (data/ optional), or a source or table name'),
        },
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      ({ name }, extra) =>
        this.call(extra, async () => {
          const datasets = await service.history.datasets(sessionId)
          const wanted = name.replace(/^(\.\/)?data\//, '')
          const dataset = datasets.find((d) => d.name === wanted)
          if (dataset) return { content: [{ type: 'text', text: await this.profileText(dataset.profile) }] }
          const known = datasets.map((d) => d.name).join(', ') || 'none yet'
          if (!sources?.sources.length) {
            throw new NotFoundError(`No data file ${name} in this session`, {
              hint: `The session's files: ${known}.`,
            })
          }
          const text = sources.sources.some((source) => source.name === name)
            ? await sources.describeAll(name)
            : await sources.describeTable(name).catch((error: unknown) => {
                if (!NotFoundError.isInstance(error)) throw error
                throw new NotFoundError(`No data file, source or table named ${name} in this session`, {
                  hint: `The session's files: ${known}. Its sources: ${sources.sources.map((s) => s.name).join(', ')}. ${error.hint ?? ''}`.trim(),
                })
              })
          return { content: [{ type: 'text', text }] }
        }),
    )

    this.server.registerTool(
      'add_data',
      {
        title: 'Add a data file',
        description:
          'Add a data file from this computer to the session (CSV, TSV, JSON, NDJSON, Excel, Parquet, or gzip/zip of them); the code reads it at data/<file name> afterwards. Returns its profile. ' +
          (folders.dirs.length > 0
            ? `Only files in the folders the user allowed: ${folders.dirs.join(', ')} (list_data shows them).`
            : 'The user allowed no folder, so this refuses every path.'),
        inputSchema: {
          path: z.string().min(1).describe('The file: absolute, or relative to the first allowed folder'),
        },
        annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
      },
      ({ path }, extra) =>
        this.call(extra, async () => {
          const real = await folders.resolve(path)
          const [dataset] = await service.addData(sessionId, [{ path: real }], {
            owner,
            signal: extra.signal,
          })
          if (!dataset) throw new Error('the file was not recorded')
          const text = `Added: the code reads it at data/${dataset.name}.\n\n${await this.profileText(dataset.profile)}`
          return { content: [{ type: 'text', text }] }
        }),
    )

    this.server.registerTool(
      'ask_analyst',
      {
        title: 'Ask Analyst',
        description:
          "Hand a question about the data to Analyst's own model: it writes and runs Python in this session's sandbox (knowing the cells run so far), repairs its errors and answers in plain words, with the code it ran and the numbers no output backs. " +
          'Slower than run_python (one model call per step); it needs a model configured for Analyst.',
        inputSchema: { question: z.string().min(1).max(20_000).describe('The question, in plain words') },
        annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
      },
      ({ question }, extra) =>
        this.call(extra, async () => {
          const progress = new Progress(extra, this.options.heartbeatMs ?? 15_000)
          try {
            const asking = service.ask(sessionId, question, { owner, ...this.caller(), signal: extra.signal })
            for (let next = await asking.next(); ; next = await asking.next()) {
              if (next.done) return answerContent(next.value, sessionId)
              const message = progressMessage(next.value)
              if (message) progress.report(message)
              if (next.value.type === 'step-end' && stepSaved(next.value))
                this.server.sendResourceListChanged()
            }
          } finally {
            progress.stop()
          }
        }),
    )
  }

  /** The session's files as resources, under one template (returned). */
  private registerResources(): ResourceTemplate {
    const { service, sessionId, owner } = this.options
    const template = new ResourceTemplate(ARTIFACT_TEMPLATE, {
      list: async () => ({ resources: await artifactResources(service, sessionId, owner) }),
    })
    this.server.registerResource(
      'artifact',
      template,
      {
        title: 'A file of the session',
        description: "A chart or file that the session's code saved (the latest of that name)",
      },
      (uri, variables) => readArtifact(service, { sessionId, owner }, uri, variables),
    )
    return template
  }
}

/** Whether a finished step saved a chart or a file (a new resource). */
function stepSaved(event: Extract<SessionEvent, { type: 'step-end' }>): boolean {
  const results = (event.record.execution?.results ?? []) as Array<{ png?: string }>
  return event.record.artifacts.length > 0 || results.some((result) => result.png)
}

/** What a client is told while an analysis works; undefined for events too small to mention. */
function progressMessage(event: SessionEvent): string | undefined {
  switch (event.type) {
    case 'preparing':
      return event.message
    case 'step-start':
      return `Step ${event.step} of at most ${event.maxSteps}: the model is writing code…`
    case 'code':
      return `Step ${event.step}: running the code…`
    case 'step-end': {
      const { record } = event
      if (record.violations?.length) return `Step ${record.step}: the guard stopped the code`
      const error = record.execution?.error
      return error ? `Step ${record.step}: ${error.name}, repairing…` : `Step ${record.step} ran`
    }
    default:
      return undefined
  }
}

/**
 * Progress notifications for a request that asked for them (it sent a progress token): one per
 * event, and one every `heartbeatMs` when nothing happens, since clients give up on a request that
 * stays silent for long (60 s by default).
 */
class Progress {
  private count = 0
  private last = 'Working…'
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly extra: RequestExtra,
    private readonly heartbeatMs: number,
  ) {
    if (this.token !== undefined) this.beat()
  }

  private get token() {
    return this.extra._meta?.progressToken
  }

  report(message: string) {
    const token = this.token
    if (token === undefined || this.extra.signal.aborted) return
    this.last = message
    this.extra
      .sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress: ++this.count, message },
      })
      .catch(() => {})
    this.beat()
  }

  private beat() {
    clearTimeout(this.timer)
    this.timer = setTimeout(() => this.report(this.last), this.heartbeatMs)
    this.timer.unref()
  }

  stop() {
    clearTimeout(this.timer)
  }
}
