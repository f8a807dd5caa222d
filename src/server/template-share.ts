/**
 * Built templates on every replica over one database. The replica that builds a template keeps it
 * under its own ANALYST_HOME/templates, and puts its export (the OCI archive of `analyst template
 * export`, src/templates/oci.ts) in the store's template files, under `template:<id>` and its name.
 * A replica asked for a template by name or id (a session, `Sandbox.create(name)`) first looks in
 * the store: when it lacks that build, or its name points at an older one, it reads the archive,
 * imports it and checks that the import is the build it asked for (the archive's id, and the
 * store's SHA-256 of its content). Nothing but the shared database: no route between replicas, no
 * shared disk. With SQLite (one replica) nothing is shared.
 *
 * A removal leaves a record in the store (`removed:<name>` and `removed:<id>`, empty files, the
 * name's under that name): the next lookup of that name or id on another replica (the same query
 * as before, at a session's create or reopen and E2B's create, never per request) drops its copy
 * when the copy was built before the removal, so that a removed template is refused everywhere.
 * The records go after KEEP_REMOVALS_MS (a bounded time: the store keeps no list of replicas, so it
 * cannot know when every one has looked).
 * At start, `serve` forgets the half-written files of a replica killed mid-share (the store's
 * `forgetPartialTemplateFiles`; no reader ever saw one) and the expired removals, then publishes
 * the named templates of its own home (built there by `analyst template build`, or imported) that
 * the store lacks: the newest build of a name wins, by the database's clock for both sides (this
 * host's build time moved onto it by how far the two clocks differ now), so replicas' clocks need
 * not agree (a build after a removal is published; one older than the store's build or removal is
 * not).
 * @module
 */
import { createReadStream, createWriteStream, rmSync } from 'node:fs'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { AnalystError, NotFoundError } from '../errors.js'
import type { TemplateFileStore } from '../store/types.js'
import { openTemplates, type TemplateStore } from '../templates/store.js'
import type { BuiltTemplate } from '../templates/types.js'

const ID = /^[0-9a-f]{64}$/
const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/
/** The key prefix of a removal's record. */
const REMOVED = 'removed:'
/** forgetTemplateFiles takes files kept before a time: one later than any, for a key itself. */
const ALWAYS = '9999-12-31T00:00:00.000Z'
/**
 * How long a removal's record is kept: a replica that holds a copy drops it at its first lookup of
 * the name after the removal, so only a replica stopped for longer than this (and started again
 * with its old copy) could miss it, and share that copy again at its start. A month covers a
 * replica left stopped over holidays; the records are empty rows, so keeping them longer costs
 * little, but not forever.
 */
export const KEEP_REMOVALS_MS = 30 * 24 * 3600_000
/** The most half-written files one start forgets (the rest at the next start). */
const PARTIAL_PER_START = 100

/** How a replica reads and writes template archives (src/templates/oci.ts). */
export interface TemplateArchives {
  exportTemplate(template: BuiltTemplate, out: string, home: string): Promise<{ bytes: number }>
  importTemplate(
    file: string,
    home: string,
    name?: string,
  ): Promise<{ template: BuiltTemplate; existed: boolean }>
}

export interface TemplateShareOptions {
  home: string
  catalog: TemplateStore
  files: TemplateFileStore
  /** Other replicas share the store (PostgreSQL); false: nothing to share. */
  shared: boolean
  /** @default src/templates/oci.ts, loaded when first needed */
  archives?: TemplateArchives
  /** What the share did that an operator may want to know (a copy dropped, a template published at start). */
  log?: (line: string) => void
  /** @default KEEP_REMOVALS_MS */
  keepRemovalsMs?: number
}

/** What `publishLocal` did with each named template of this home. */
export interface LocalPublished {
  published: string[]
  /** The store holds a newer build of the name, or this one already. */
  kept: string[]
  /** Removed on another replica after it was built: dropped here. */
  dropped: string[]
  failed: Array<{ name: string; error: string }>
}

export class TemplateShare {
  readonly #options: TemplateShareOptions
  /** Imports under way, by template id: two requests for one template read it once. */
  readonly #fetching = new Map<string, Promise<void>>()

  constructor(options: TemplateShareOptions) {
    this.#options = options
  }

  async #archives(): Promise<TemplateArchives> {
    return this.#options.archives ?? (await import('../templates/oci.js'))
  }

  /** Puts a template just built under `name` in the store for the other replicas; its size, or 0 when nothing is shared. */
  async publish(template: BuiltTemplate, name: string): Promise<number> {
    const { shared, catalog, files, home } = this.#options
    if (!shared) return 0
    // Built before (from the cache), and shared then under this name.
    const there = await files.statTemplateFile(`template:${template.id}`)
    if (there?.name === name) return there.size
    const folder = catalog.scratch('share')
    try {
      const archive = join(folder, 'template.tar')
      // Exported without its names: one imported by id must not move a name another replica has.
      await (await this.#archives()).exportTemplate({ ...template, names: [] }, archive, home)
      const stored = await files.putTemplateFile(`template:${template.id}`, createReadStream(archive), {
        name,
      })
      // Built again after a removal: the name's record went with the put, the id's goes now.
      await files.forgetTemplateFiles(`${REMOVED}${template.id}`, ALWAYS)
      return stored.size
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  }

  /**
   * Makes the build that `nameOrId` names in the store a template here too, when it is not: read
   * from the store, imported and checked. Names the store does not know are left to the catalog.
   */
  async ensure(nameOrId: string): Promise<void> {
    const { shared, catalog, files } = this.#options
    if (!shared) return
    const file = ID.test(nameOrId)
      ? ((await files.statTemplateFile(`template:${nameOrId}`)) ??
        (await files.statTemplateFile(`${REMOVED}${nameOrId}`)))
      : NAME.test(nameOrId)
        ? await files.namedTemplateFile(nameOrId)
        : undefined
    if (!file) return
    if (file.key.startsWith(REMOVED)) {
      this.#drop(nameOrId, file.createdAt, await this.#onDatabaseClock())
      return
    }
    const id = file.key.slice('template:'.length)
    const name = file.name === nameOrId ? nameOrId : undefined
    const here = catalog.get(id)
    if (here) {
      if (name && !here.names.includes(name)) catalog.setName(name, id)
      return
    }
    let fetching = this.#fetching.get(id)
    if (!fetching) {
      fetching = this.#fetch(id, name).finally(() => this.#fetching.delete(id))
      this.#fetching.set(id, fetching)
    }
    await fetching
    if (name && !catalog.get(id)?.names.includes(name)) catalog.setName(name, id)
  }

  /**
   * Takes a removed template out of the store, so that no replica imports it again, and records the
   * removal of its name and id, so that the replicas that hold a copy drop it at their next lookup.
   */
  async forget(removed: { name?: string; id?: string }): Promise<void> {
    const { shared, files } = this.#options
    if (!shared) return
    await this.#expireRemovals()
    const named = removed.name ? await files.namedTemplateFile(removed.name) : undefined
    const byId = removed.id ? await files.statTemplateFile(`template:${removed.id}`) : undefined
    const keys = [byId?.key, named?.key].filter((key) => key?.startsWith('template:'))
    // A key is 64 hex digits after its prefix: as a prefix, it is that file alone.
    for (const key of new Set(keys)) await files.forgetTemplateFiles(key as string, ALWAYS)
    const names = new Set([removed.name, byId?.name].filter((name): name is string => !!name))
    // A name's record replaces the name's file; an id's stands beside (a build of it again clears it).
    for (const name of names) await files.putTemplateFile(`${REMOVED}${name}`, [], { name })
    if (removed.id) await files.putTemplateFile(`${REMOVED}${removed.id}`, [])
  }

  /**
   * Removes a template that only other replicas hold (the store has a build under this name or
   * id, this replica none), as `forget` does; false when the store has none either.
   */
  async forgetElsewhere(nameOrId: string): Promise<boolean> {
    const { shared, files } = this.#options
    if (!shared) return false
    const byId = ID.test(nameOrId)
    const file = byId
      ? await files.statTemplateFile(`template:${nameOrId}`)
      : NAME.test(nameOrId)
        ? await files.namedTemplateFile(nameOrId)
        : undefined
    if (!file?.key.startsWith('template:')) return false
    await this.forget(byId ? { id: nameOrId } : { name: nameOrId, id: file.key.slice('template:'.length) })
    return true
  }

  /**
   * Serve's start, before `publishLocal`: forgets the files that a replica killed mid-write left
   * (a share, an E2B upload), and the removals' records older than `keepRemovalsMs`. How many of each.
   */
  async tidy(): Promise<{ partial: number; removals: number }> {
    const { shared, files } = this.#options
    const partial = await files.forgetPartialTemplateFiles(PARTIAL_PER_START)
    return { partial, removals: shared ? await this.#expireRemovals() : 0 }
  }

  async #expireRemovals(): Promise<number> {
    const { files, keepRemovalsMs = KEEP_REMOVALS_MS } = this.#options
    const before = new Date((await files.databaseTimeMs()) - keepRemovalsMs).toISOString()
    return files.forgetTemplateFiles(REMOVED, before)
  }

  /**
   * This host's times on the database's clock (the one that stamps the store's files): moved by
   * how far the two clocks differ now, so that the newest build wins whatever the clocks say.
   */
  async #onDatabaseClock(): Promise<(time: string) => number> {
    const sent = Date.now()
    const there = await this.#options.files.databaseTimeMs()
    const ahead = there - (sent + Date.now()) / 2
    return (time) => Date.parse(time) + ahead
  }

  /**
   * Publishes the named templates of this home that the store lacks, or holds an older build of
   * (serve's start: those `analyst template build` made here, or ANALYST_TEMPLATE_IMPORT brought),
   * and drops those removed elsewhere since they were built. Each name on its own: one that fails
   * (another replica published it at the same moment) does not stop the rest.
   */
  async publishLocal(): Promise<LocalPublished> {
    const done: LocalPublished = { published: [], kept: [], dropped: [], failed: [] }
    const { shared, catalog, files } = this.#options
    if (!shared) return done
    const onDatabaseClock = await this.#onDatabaseClock()
    for (const template of catalog.list()) {
      for (const name of template.names) {
        try {
          const there = await files.namedTemplateFile(name)
          const newer = !there || onDatabaseClock(template.createdAt) > Date.parse(there.createdAt)
          if (there?.key === `template:${template.id}` || (!newer && !there?.key.startsWith(REMOVED))) {
            done.kept.push(name)
          } else if (!newer) {
            this.#drop(name, (there as { createdAt: string }).createdAt, onDatabaseClock)
            done.dropped.push(name)
          } else {
            await this.publish(template, name)
            done.published.push(name)
          }
        } catch (error) {
          done.failed.push({ name, error: (error as Error).message })
        }
      }
    }
    return done
  }

  /**
   * The template `nameOrId` names, brought from the store if need be: what serve's `--template`
   * warms its pool with. Not here nor in the store: a NotFoundError that says where it looked.
   */
  async need(nameOrId: string): Promise<BuiltTemplate> {
    await this.ensure(nameOrId)
    try {
      return this.#options.catalog.resolve(nameOrId)
    } catch (error) {
      if (!NotFoundError.isInstance(error) || !this.#options.shared) throw error
      throw new NotFoundError(`${error.message}, nor in the database the replicas share`, {
        hint: `Build it on any replica (POST /api/templates) or on a host with the same ANALYST_DATABASE_URL (analyst template build SPEC --name ${nameOrId}): it is put in the database for every replica.`,
        cause: error,
      })
    }
  }

  /** Drops this replica's copy of a template removed at `removedAt` (by name: the name; by id: the build), when it is older. */
  #drop(nameOrId: string, removedAt: string, onDatabaseClock: (time: string) => number): void {
    const { catalog } = this.#options
    let here: BuiltTemplate
    try {
      here = catalog.resolve(nameOrId)
    } catch {
      return
    }
    // Built here after the removal: a template of its own (serve publishes it at its next start).
    if (onDatabaseClock(here.createdAt) >= Date.parse(removedAt)) return
    if (!ID.test(nameOrId) && !here.names.includes(nameOrId)) return
    catalog.remove(nameOrId)
    this.#options.log?.(
      `template ${nameOrId}: removed on another replica (${removedAt}); the copy here is dropped`,
    )
  }

  async #fetch(id: string, name: string | undefined): Promise<void> {
    const { catalog, files, home } = this.#options
    const content = await files.readTemplateFile(`template:${id}`)
    if (!content) return
    const folder = catalog.scratch('fetch')
    try {
      const archive = join(folder, 'template.tar')
      await pipeline(content, createWriteStream(archive))
      const { template, existed } = await (await this.#archives()).importTemplate(archive, home, name)
      if (template.id !== id) {
        if (!existed) catalog.remove(template.id)
        throw new AnalystError(
          `The archive of template ${id.slice(0, 12)} in the database holds ${template.id.slice(0, 12)}`,
          { hint: 'Build the template again on any replica: its archive is put in the database anew.' },
        )
      }
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  }
}

/**
 * The share of a host where the replicas' database is configured (ANALYST_DATABASE_URL, as serve
 * reads it), for the CLI's template commands; undefined without one (SQLite is this host's alone).
 */
export async function withDatabaseShare<T>(
  home: string,
  env: NodeJS.ProcessEnv,
  use: (share: TemplateShare) => Promise<T>,
): Promise<T | undefined> {
  if (!env.ANALYST_DATABASE_URL) return undefined
  const { openStores } = await import('../store/index.js')
  const stores = await openStores(home, env)
  try {
    const catalog = openTemplates(home)
    return await use(new TemplateShare({ home, catalog, files: stores.templateFiles, shared: true }))
  } finally {
    await stores.close()
  }
}

/**
 * The catalog the server's doors read: this replica's templates, with `ensure` bringing another's,
 * `remove` taking a template out of the store too, and `forgetElsewhere` removing one that only
 * other replicas hold.
 */
export function sharedCatalog(options: TemplateShareOptions): {
  catalog: TemplateStore & {
    ensure(nameOrId: string): Promise<void>
    forgetElsewhere(nameOrId: string): Promise<boolean>
  }
  share: TemplateShare
} {
  const share = new TemplateShare(options)
  const local = options.catalog
  const catalog = {
    ...local,
    ensure: (nameOrId: string) => share.ensure(nameOrId),
    forgetElsewhere: (nameOrId: string) => share.forgetElsewhere(nameOrId),
    remove: (nameOrId: string) => {
      const removed = local.remove(nameOrId)
      // The template goes from the store after; the other replicas drop their copies at their next lookup.
      share
        .forget(removed)
        .catch((error: unknown) =>
          options.log?.(`template ${nameOrId}: not removed from the database: ${(error as Error).message}`),
        )
      return removed
    },
  }
  return { catalog, share }
}
