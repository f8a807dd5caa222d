/**
 * The sources a server offers its sessions by name: those of ANALYST_SOURCES, each maybe kept to
 * some tokens, groups or users, and those of `--data`, which every caller may use and a session
 * gets when it names none. A session picks names and keeps them; each live session opens its own connections to its
 * sources and closes them with its sandbox. Whoever picks a name never sees its URL or password.
 * @module
 */
import { InvalidArgumentError, NotFoundError } from '../errors.js'
import { describeSources, type QuerySourceInfo } from '../sandbox/query.js'
import type { NamedSource } from './config.js'
import { Sources, type SourcesOptions } from './sources.js'
import type { SourceSpec } from './spec.js'

export interface SourceDirectoryOptions {
  /** The named sources (ANALYST_SOURCES). */
  named?: Map<string, NamedSource>
  /** Sources every caller may use, given to a session that names none (`--data`). */
  defaults?: SourceSpec[]
  /** The owner a token makes (the server's `ownerOf`): a source kept to tokens is its tokens' owners'. */
  ownerOf: (token: string) => string
  /** How each session's sources are opened (caps, where DuckDB spills). */
  open?: SourcesOptions
}

/**
 * Who asks for sources: the owner their sessions get (a token's, a user's; null on a server
 * without tokens) and, for a signed-in user, their groups and email.
 */
export interface SourceCaller {
  owner: string | null
  groups?: readonly string[]
  email?: string
}

/** A session's data file that stays on the host: its SQL table, and the file (its extension says its format). */
export interface HostTable {
  name: string
  path: string
}

/** A caller given as its owner alone (a token, or nobody) or in full. */
export type Caller = SourceCaller | string | null

const callerOf = (caller: Caller): SourceCaller =>
  caller === null || typeof caller === 'string' ? { owner: caller } : caller

/** A source as a caller sees it in the list: its name, kind, whether new sessions get it, and its tables. */
export interface ListedSource extends QuerySourceInfo {
  default: boolean
  /** The source's description (tables, columns, keys), or why it cannot be reached now. */
  description?: string
  error?: string
}

interface Entry {
  spec: SourceSpec
  default: boolean
  /** Who may use it (any of these); undefined: everyone. */
  allowed?: { owners: Set<string>; groups: Set<string>; emails: Set<string> }
}

/** What a door that shows sources to a model says of them (the shape of MCP's McpSources). */
export interface SourcesDescriber {
  readonly sources: readonly QuerySourceInfo[]
  describe(options: { budgetChars: number; question?: string }): Promise<string>
  describeAll(source?: string): Promise<string>
  describeTable(table: string, source?: string): Promise<string>
}

/** What the list says of a source: its description, or why it cannot be reached; warnings are for the log. */
type Described = { description?: string; error?: string; warnings?: string[] }

/** How long a source's description is kept for the list before it is read again; a failure, less. */
const DESCRIPTION_TTL_MS = 5 * 60_000
const FAILURE_TTL_MS = 30_000

function withoutWarnings({ warnings: _, ...described }: Described) {
  return described
}

export class SourceDirectory {
  readonly #entries = new Map<string, Entry>()
  readonly #open: SourcesOptions
  readonly #descriptions = new Map<string, { at: number; value: Promise<Described> }>()

  constructor(options: SourceDirectoryOptions) {
    this.#open = options.open ?? {}
    for (const [name, source] of options.named ?? []) {
      this.#entries.set(name, {
        spec: source.spec,
        default: false,
        ...(source.tokens || source.groups || source.users
          ? {
              allowed: {
                owners: new Set((source.tokens ?? []).map(options.ownerOf)),
                groups: new Set(source.groups),
                emails: new Set(source.users),
              },
            }
          : {}),
      })
    }
    for (const spec of options.defaults ?? []) {
      if (this.#entries.has(spec.name)) {
        throw new InvalidArgumentError(`Two sources are named "${spec.name}" (ANALYST_SOURCES and --data)`, {
          hint: 'Name the --data one otherwise with NAME=URL.',
        })
      }
      this.#entries.set(spec.name, { spec, default: true })
    }
  }

  get size(): number {
    return this.#entries.size
  }

  /** Every source's name, whoever may use it. */
  names(): string[] {
    return [...this.#entries.keys()]
  }

  /**
   * Reaches every source once (as the list will): those that fail, with what is wrong, and those
   * whose role can change data, with what to do.
   */
  async verify(): Promise<{ name: string; error: string }[]> {
    const results = await Promise.all(
      this.names().map(async (name) => ({ name, ...(await this.#describe(name)) })),
    )
    return results.flatMap((result) => [
      ...(result.error ? [{ name: result.name, error: result.error }] : []),
      ...(result.warnings ?? []).map((warning) => ({ name: result.name, error: warning })),
    ])
  }

  #mayUse(entry: Entry, caller: SourceCaller): boolean {
    const { allowed } = entry
    if (!allowed) return true
    if (caller.owner !== null && allowed.owners.has(caller.owner)) return true
    if (caller.email && allowed.emails.has(caller.email.toLowerCase())) return true
    return (caller.groups ?? []).some((group) => allowed.groups.has(group))
  }

  /** The sources `caller` may use, in the order they were given. */
  available(caller: Caller): QuerySourceInfo[] {
    const who = callerOf(caller)
    return [...this.#entries]
      .filter(([, entry]) => this.#mayUse(entry, who))
      .map(([name, entry]) => ({ name, kind: entry.spec.kind }))
  }

  /**
   * The names a new session of `caller` gets: those it asked for, each checked (a name it may not
   * use is refused as one that does not exist), or the defaults when it named none.
   */
  choose(names: readonly string[] | undefined, caller: Caller): string[] {
    const who = callerOf(caller)
    if (names === undefined) {
      return [...this.#entries].filter(([, entry]) => entry.default).map(([name]) => name)
    }
    const chosen = [...new Set(names)]
    for (const name of chosen) {
      const entry = this.#entries.get(name)
      if (!entry || !this.#mayUse(entry, who)) {
        const names = this.available(who).map((source) => source.name)
        throw new NotFoundError(`There is no source named "${name}"`, {
          hint: names.length
            ? `The sources you may use are: ${names.join(', ')} (GET /api/sources lists them).`
            : 'This server offers you no sources: its ANALYST_SOURCES file names them, with the tokens, groups or users that may use each.',
        })
      }
    }
    return chosen
  }

  /**
   * Connects to these sources for one live session, and to its data files too large for the
   * sandbox (`tables`: each a file DuckDB queries in place); the caller closes them with its sandbox.
   */
  async open(names: readonly string[], tables: readonly HostTable[] = []): Promise<Sources> {
    const named = names.map((name) => {
      const entry = this.#entries.get(name)
      if (!entry) {
        throw new NotFoundError(`The session queries the source "${name}", which this server no longer has`, {
          hint: 'Add it back to ANALYST_SOURCES (or --data) and restart the server, or start a new session.',
        })
      }
      return entry.spec
    })
    const files = tables.map(
      (table): SourceSpec => ({ name: table.name, kind: 'file', location: table.path }),
    )
    return Sources.open([...named, ...files], this.#open)
  }

  /**
   * Descriptions of these sources on demand (MCP's list_data and profile_data): each call connects,
   * describes and closes, so nothing is held open between a client's calls.
   */
  describer(names: readonly string[]): SourcesDescriber {
    const sources = names.flatMap((name) => {
      const entry = this.#entries.get(name)
      return entry ? [{ name, kind: entry.spec.kind }] : []
    })
    const using = <T>(work: (open: Sources) => Promise<T>) => this.#using(names, work)
    return {
      sources,
      describe: (options) => using((open) => open.describe(options)),
      describeAll: (source) => using((open) => open.describeAll(source)),
      describeTable: (table, source) => using((open) => open.describeTable(table, source)),
    }
  }

  async #using<T>(names: readonly string[], work: (open: Sources) => Promise<T>): Promise<T> {
    const sources = await this.open(names)
    try {
      return await work(sources)
    } finally {
      await sources.close()
    }
  }

  /** The sources `caller` may use, each with its description (read once in a while, not per call). */
  async list(caller: Caller): Promise<ListedSource[]> {
    return Promise.all(
      this.available(caller).map(async (info) => ({
        ...info,
        default: this.#entries.get(info.name)?.default === true,
        ...withoutWarnings(await this.#describe(info.name)),
      })),
    )
  }

  #describe(name: string): Promise<Described> {
    const cached = this.#descriptions.get(name)
    if (cached && Date.now() - cached.at < DESCRIPTION_TTL_MS) return cached.value
    const read = async (entry: { at: number }) => {
      try {
        return await this.#using([name], async (sources) => {
          const warnings = (await sources.warnings()).map((warning) => `${warning.message}. ${warning.hint}`)
          return { description: await describeSources(sources), ...(warnings.length ? { warnings } : {}) }
        })
      } catch (error) {
        // Kept briefly: a server that is down is tried again on a later list, not on every one.
        entry.at = Date.now() - DESCRIPTION_TTL_MS + FAILURE_TTL_MS
        return { error: (error as Error).message }
      }
    }
    const entry = {
      at: Date.now(),
      value: Promise.resolve({}) as Promise<Described>,
    }
    entry.value = read(entry)
    this.#descriptions.set(name, entry)
    return entry.value
  }
}
