/**
 * The sources a server offers its sessions by name: those of ANALYST_SOURCES, each maybe kept to
 * some tokens, and those of `--data`, which every caller may use and a session gets when it names
 * none. A session picks names and keeps them; each live session opens its own connections to its
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
  /** The owners that may use it; undefined: everyone. */
  owners?: Set<string>
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
        ...(source.tokens ? { owners: new Set(source.tokens.map(options.ownerOf)) } : {}),
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

  #mayUse(entry: Entry, owner: string | null): boolean {
    return entry.owners === undefined || (owner !== null && entry.owners.has(owner))
  }

  /** The sources `owner` may use (null: a server without tokens), in the order they were given. */
  available(owner: string | null): QuerySourceInfo[] {
    return [...this.#entries]
      .filter(([, entry]) => this.#mayUse(entry, owner))
      .map(([name, entry]) => ({ name, kind: entry.spec.kind }))
  }

  /**
   * The names a new session of `owner` gets: those it asked for, each checked (a name it may not
   * use is refused as one that does not exist), or the defaults when it named none.
   */
  choose(names: readonly string[] | undefined, owner: string | null): string[] {
    if (names === undefined) {
      return [...this.#entries].filter(([, entry]) => entry.default).map(([name]) => name)
    }
    const chosen = [...new Set(names)]
    for (const name of chosen) {
      const entry = this.#entries.get(name)
      if (!entry || !this.#mayUse(entry, owner)) {
        const names = this.available(owner).map((source) => source.name)
        throw new NotFoundError(`There is no source named "${name}"`, {
          hint: names.length
            ? `The sources you may use are: ${names.join(', ')} (GET /api/sources lists them).`
            : 'This server offers you no sources: its ANALYST_SOURCES file names them, with the tokens that may use each.',
        })
      }
    }
    return chosen
  }

  /** Connects to these sources for one live session; the caller closes them with its sandbox. */
  async open(names: readonly string[]): Promise<Sources> {
    const specs = names.map((name) => {
      const entry = this.#entries.get(name)
      if (!entry) {
        throw new NotFoundError(`The session queries the source "${name}", which this server no longer has`, {
          hint: 'Add it back to ANALYST_SOURCES (or --data) and restart the server, or start a new session.',
        })
      }
      return entry.spec
    })
    return Sources.open(specs, this.#open)
  }

  /** The sources `owner` may use, each with its description (read once in a while, not per call). */
  async list(owner: string | null): Promise<ListedSource[]> {
    return Promise.all(
      this.available(owner).map(async (info) => ({
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
        const sources = await this.open([name])
        try {
          const warnings = (await sources.warnings()).map((warning) => `${warning.message}. ${warning.hint}`)
          return { description: await describeSources(sources), ...(warnings.length ? { warnings } : {}) }
        } finally {
          await sources.close()
        }
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
