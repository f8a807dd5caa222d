/**
 * A sandbox's sources: the QueryHost that `sql()` asks. It holds one Source per database and one
 * DuckDB for all the data files (so files can be joined), opens each once up front (a wrong URL or
 * password fails here, before any model call), routes a query by its source's name and applies
 * the caps. No error that leaves it carries a password.
 * @module
 */
import { homedir } from 'node:os'
import { join } from 'node:path'
import { AnalystError, InvalidArgumentError, NotFoundError } from '../errors.js'
import type { QueryHost, QueryOptions, QueryRequest, QuerySourceInfo, QueryStream } from '../sandbox/query.js'
import {
  describeTable,
  describeWithinBudget,
  formatInFull,
  type SourceDescription,
  type SourceGroup,
  sampleAll,
} from './describe.js'
import { type CatalogTable, DEFAULT_LIMITS, type Limits, type Source, type WriteAccess } from './source.js'
import type { SourceKind, SourceSpec } from './spec.js'
import { SqliteSource } from './sqlite.js'

export interface SourcesOptions {
  limits?: Partial<Limits>
  /** Where DuckDB spills. @default ANALYST_HOME/spill (~/.analyst/spill) */
  spillDirectory?: string
  /** DuckDB's memory limit for data files. @default ANALYST_DUCKDB_MEMORY, else '2GB' */
  memoryLimit?: string
  /**
   * Told of each source whose role can change data, once opened (the database role is the real
   * barrier: Analyst should be given a read-only one).
   */
  onWarning?: (warning: SourceWarning) => void
}

/** A source's tables, as `analyst profile --json` gives them. */
export interface SourceProfile {
  /** The names sql(source=…) takes: the database's, or one per data file. */
  names: string[]
  kind: SourceKind
  tables: CatalogTable[]
}

/** Something the user should know about a source that still opened. */
export interface SourceWarning {
  source: string
  message: string
  hint: string
}

/** What the warning about a role that can write says to do. */
export const READ_ONLY_ROLE_HINT =
  'Give Analyst a role that may only read (PostgreSQL: GRANT SELECT, or the pg_read_all_data role; MySQL/MariaDB: GRANT SELECT ON db.*): every query runs read-only, but the role is the real barrier.'

/** How long a source's catalog is kept before it is read again. */
const CATALOG_TTL_MS = 5 * 60_000

/** Creates the source of one spec (not yet connected). Drivers load only when a kind is used. */
async function createSource(spec: SourceSpec): Promise<Source> {
  switch (spec.kind) {
    case 'postgres': {
      const { PostgresSource } = await import('./postgres.js')
      return new PostgresSource(spec)
    }
    case 'mysql': {
      const { MysqlSource } = await import('./mysql.js')
      return new MysqlSource(spec)
    }
    case 'sqlite':
      return new SqliteSource(spec.location)
    case 'duckdb': {
      const { DuckDbSource } = await import('./duckdb.js')
      return new DuckDbSource({ database: spec.location })
    }
    case 'file':
      throw new Error('file sources are grouped into one DuckDB')
  }
}

/** The error with every password of these specs replaced: a driver may quote what it was given. */
function scrub(error: unknown, secrets: string[]): unknown {
  if (!(error instanceof Error)) return error
  const clean = (text: string | undefined) =>
    text === undefined ? text : secrets.reduce((out, secret) => out.split(secret).join('***'), text)
  if (!secrets.some((secret) => error.message.includes(secret) || error.stack?.includes(secret))) return error
  if (AnalystError.isInstance(error)) {
    const copy = new (error.constructor as typeof AnalystError)(clean(error.message) as string, {
      hint: clean(error.hint),
      fix: error.fix,
    })
    return copy
  }
  return new AnalystError(clean(error.message) as string)
}

/** DuckDB's memory limit from ANALYST_DUCKDB_MEMORY (e.g. `4GB`), checked here: DuckDB's own refusal would blame the file. */
function duckDbMemory(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env.ANALYST_DUCKDB_MEMORY?.trim()
  if (!value) return undefined
  if (!/^\d+(\.\d+)?\s*(K|M|G|T)i?B$/i.test(value)) {
    throw new InvalidArgumentError(`ANALYST_DUCKDB_MEMORY=${value} is not a size`, {
      hint: "Give DuckDB's memory limit for data files as a size, e.g. ANALYST_DUCKDB_MEMORY=4GB.",
    })
  }
  return value
}

export class Sources implements QueryHost {
  readonly sources: QuerySourceInfo[]
  readonly limits: Limits
  #byName: Map<string, { source: Source; spec?: SourceSpec }>
  #secrets: string[]
  #all: Source[]
  #catalogs = new Map<Source, { at: number; tables: Promise<SourceDescription['tables']> }>()

  private constructor(
    entries: { info: QuerySourceInfo; source: Source; spec?: SourceSpec }[],
    all: Source[],
    secrets: string[],
    limits: Limits,
  ) {
    this.sources = entries.map((entry) => entry.info)
    this.#byName = new Map(entries.map((entry) => [entry.info.name, entry]))
    this.#all = all
    this.#secrets = secrets
    this.limits = limits
  }

  /** Creates and connects every source once; the first that fails closes the others and throws. */
  static async open(specs: readonly SourceSpec[], options: SourcesOptions = {}): Promise<Sources> {
    const names = new Set<string>()
    for (const spec of specs) {
      if (names.has(spec.name)) {
        throw new InvalidArgumentError(`Two sources are named "${spec.name}"`, {
          hint: 'Name one of them with NAME=URL (or NAME=PATH).',
        })
      }
      names.add(spec.name)
    }
    const secrets = specs.flatMap((spec) => (spec.password ? [spec.password] : []))
    const entries: { info: QuerySourceInfo; source: Source; spec?: SourceSpec }[] = []
    const all: Source[] = []
    try {
      const files = specs.filter((spec) => spec.kind === 'file')
      if (files.length > 0) {
        const { DuckDbSource } = await import('./duckdb.js')
        const source = new DuckDbSource({
          files: files.map((spec) => ({ name: spec.name, path: spec.location })),
          spillDirectory:
            options.spillDirectory ?? join(process.env.ANALYST_HOME || join(homedir(), '.analyst'), 'spill'),
          memoryLimit: options.memoryLimit ?? duckDbMemory(),
        })
        all.push(source)
        await source.open()
        for (const spec of files) entries.push({ info: { name: spec.name, kind: 'file' }, source, spec })
      }
      for (const spec of specs) {
        if (spec.kind === 'file') continue
        const source = await createSource(spec)
        all.push(source)
        await source.open()
        entries.push({ info: { name: spec.name, kind: spec.kind }, source, spec })
      }
    } catch (error) {
      await Promise.allSettled(all.map((source) => source.close()))
      throw scrub(error, secrets)
    }
    const order = new Map(specs.map((spec, index) => [spec.name, index]))
    entries.sort((a, b) => (order.get(a.info.name) ?? 0) - (order.get(b.info.name) ?? 0))
    const sources = new Sources(entries, all, secrets, { ...DEFAULT_LIMITS, ...options.limits })
    if (options.onWarning) {
      for (const warning of await sources.warnings()) options.onWarning(warning)
    }
    return sources
  }

  /** The sources whose role can change data, each with what to do (an unknown answer says nothing). */
  async warnings(): Promise<SourceWarning[]> {
    const access = await this.writeAccess().catch(() => [])
    return access
      .filter(({ access }) => access.canWrite)
      .map(({ name, access }) => ({
        source: name,
        message: `The role of source "${name}" can change data: ${access.reason}`,
        hint: READ_ONLY_ROLE_HINT,
      }))
  }

  /** One group per connection: each database, and all data files together. */
  groups(): SourceGroup[] {
    const groups = new Map<Source, SourceGroup>()
    for (const info of this.sources) {
      const entry = this.#byName.get(info.name)
      if (!entry) continue
      const group = groups.get(entry.source)
      if (group) group.names.push(info.name)
      else groups.set(entry.source, { names: [info.name], kind: info.kind, source: entry.source })
    }
    return [...groups.values()]
  }

  /**
   * Each group's tables, from a catalog read at most every few minutes. The tables are the cached
   * ones, so the samples read for one question serve the next ones (samples are only ever added).
   */
  async #described(only?: string): Promise<SourceDescription[]> {
    const groups = this.groups().filter((group) => only === undefined || group.names.includes(only))
    if (only !== undefined && groups.length === 0) this.source(only)
    try {
      return await Promise.all(
        groups.map(async (group) => {
          let cached = this.#catalogs.get(group.source)
          if (!cached || Date.now() - cached.at > CATALOG_TTL_MS) {
            cached = { at: Date.now(), tables: group.source.catalog().then((catalog) => catalog.tables) }
            this.#catalogs.set(group.source, cached)
            cached.tables.catch(() => this.#catalogs.delete(group.source))
          }
          return { group, tables: await cached.tables }
        }),
      )
    } catch (error) {
      throw scrub(error, this.#secrets)
    }
  }

  async describe(options: { budgetChars: number; question?: string }): Promise<string> {
    try {
      return await describeWithinBudget(await this.#described(), options)
    } catch (error) {
      throw scrub(error, this.#secrets)
    }
  }

  /** Every table of the sources (or of the one named), with samples: `analyst profile --json`. */
  async profile(source?: string): Promise<SourceProfile[]> {
    return (await this.#profiled(source)).map(({ group, tables }) => ({
      names: [...group.names],
      kind: group.kind,
      tables,
    }))
  }

  /** Every table of the sources (or of the one named) in full, with samples. */
  async describeAll(source?: string): Promise<string> {
    return formatInFull(await this.#profiled(source))
  }

  async #profiled(source?: string): Promise<SourceDescription[]> {
    try {
      const described = await this.#described(source)
      await sampleAll(described)
      return described
    } catch (error) {
      throw scrub(error, this.#secrets)
    }
  }

  async describeTable(table: string, source?: string): Promise<string> {
    try {
      return await describeTable(await this.#described(source), table)
    } catch (error) {
      throw scrub(error, this.#secrets)
    }
  }

  /** The source a request names, or the only one (file sources share one database). */
  source(name: string | undefined): Source {
    if (name !== undefined) {
      const entry = this.#byName.get(name)
      if (!entry) {
        throw new NotFoundError(`There is no source named "${name}"`, {
          hint: `The sources are: ${this.sources.map((source) => source.name).join(', ') || 'none'}.`,
        })
      }
      return entry.source
    }
    if (this.#all.length === 1) return this.#all[0] as Source
    throw new InvalidArgumentError(
      this.#all.length === 0 ? 'There is no data source to query' : 'There are several sources: say which',
      {
        hint:
          this.#all.length === 0
            ? 'Give a database URL or a data file with --data.'
            : `Pass source= one of: ${this.sources.map((source) => source.name).join(', ')}.`,
      },
    )
  }

  async run(request: QueryRequest, options: QueryOptions): Promise<QueryStream> {
    const secrets = this.#secrets
    let stream: QueryStream
    try {
      const source = this.source(request.source)
      stream = await source.run(request.query, request.params, { ...options, limits: this.limits })
    } catch (error) {
      throw scrub(error, secrets)
    }
    // A query can also fail while its rows come (a COPY's error, a server gone): scrubbed alike.
    const { batches } = stream
    async function* scrubbed() {
      try {
        yield* batches
      } catch (error) {
        throw scrub(error, secrets)
      }
    }
    return { ...stream, batches: scrubbed(), summary: () => stream.summary() }
  }

  /** Whether each source's role can write, for `analyst doctor`. */
  async writeAccess(): Promise<{ name: string; access: WriteAccess }[]> {
    const seen = new Set<Source>()
    const out: { name: string; access: WriteAccess }[] = []
    for (const info of this.sources) {
      const entry = this.#byName.get(info.name)
      if (!entry || seen.has(entry.source)) continue
      seen.add(entry.source)
      try {
        out.push({ name: info.name, access: await entry.source.canWrite() })
      } catch (error) {
        throw scrub(error, this.#secrets)
      }
    }
    return out
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.#all.map((source) => source.close()))
  }
}
