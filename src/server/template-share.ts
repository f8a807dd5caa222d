/**
 * Built templates on every replica over one database. The replica that builds a template keeps it
 * under its own ANALYST_HOME/templates, and puts its export (the OCI archive of `analyst template
 * export`, src/templates/oci.ts) in the store's template files, under `template:<id>` and its name.
 * A replica asked for a template by name or id (a session, `Sandbox.create(name)`) first looks in
 * the store: when it lacks that build, or its name points at an older one, it reads the archive,
 * imports it and checks that the import is the build it asked for (the archive's id, and the
 * store's SHA-256 of its content). Nothing but the shared database: no route between replicas, no
 * shared disk. With SQLite (one replica) nothing is shared.
 * @module
 */
import { createReadStream, createWriteStream, rmSync } from 'node:fs'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { AnalystError } from '../errors.js'
import type { TemplateFileStore } from '../store/types.js'
import type { TemplateStore } from '../templates/store.js'
import type { BuiltTemplate } from '../templates/types.js'

const ID = /^[0-9a-f]{64}$/
const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/

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
      ? await files.statTemplateFile(`template:${nameOrId}`)
      : NAME.test(nameOrId)
        ? await files.namedTemplateFile(nameOrId)
        : undefined
    if (!file) return
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

  /** Takes a removed template out of the store, so that no replica imports it again. */
  async forget(removed: { name?: string; id?: string }): Promise<void> {
    const { shared, files } = this.#options
    if (!shared) return
    const named = removed.name ? await files.namedTemplateFile(removed.name) : undefined
    const keys = [...(removed.id ? [`template:${removed.id}`] : []), ...(named ? [named.key] : [])]
    // A key is 64 hex digits after its prefix: as a prefix, it is that file alone.
    const always = new Date(Date.now() + 3600_000).toISOString()
    for (const key of new Set(keys)) await files.forgetTemplateFiles(key, always)
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
 * The catalog the server's doors read: this replica's templates, with `ensure` bringing another's
 * and `remove` taking a template out of the store too.
 */
export function sharedCatalog(options: TemplateShareOptions): {
  catalog: TemplateStore & { ensure(nameOrId: string): Promise<void> }
  share: TemplateShare
} {
  const share = new TemplateShare(options)
  const local = options.catalog
  const catalog = {
    ...local,
    ensure: (nameOrId: string) => share.ensure(nameOrId),
    remove: (nameOrId: string) => {
      const removed = local.remove(nameOrId)
      // The template goes from the store after; a replica that imported it keeps its copy.
      share.forget(removed).catch(() => undefined)
      return removed
    },
  }
  return { catalog, share }
}
