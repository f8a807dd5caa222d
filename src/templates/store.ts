/**
 * The template store: built templates under ANALYST_HOME/templates, content-addressed by id, with
 * names that point at them (the layout is in types.ts). Reading is all an engine needs
 * (`resolveTemplate`); the builder adds a template with `commit` once its folder is complete.
 *
 * A folder counts as a template only once its manifest.json is there: the builder writes it last,
 * and removal takes it away first, so a reader never sees half a template.
 * @module
 */
import { randomBytes } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { basename, join } from 'node:path'
import { z } from 'zod'
import { InvalidArgumentError, NotFoundError } from '../errors.js'
import type { BuiltTemplate } from './types.js'

/** The manifest as written: a BuiltTemplate without what its place on disk says (dir, rootfs, names). */
export type TemplateManifest = Omit<BuiltTemplate, 'dir' | 'rootfs' | 'names'> & { hasRootfs: boolean }

const manifestSchema = z.object({
  id: z.string().regex(/^[0-9a-f]{64}$/),
  base: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('host') }),
    z.object({ kind: z.literal('debian'), suite: z.string() }),
    z.object({ kind: z.literal('oci'), image: z.string() }),
  ]),
  hasRootfs: z.boolean(),
  python: z.object({ path: z.string(), version: z.string() }),
  languages: z.array(z.enum(['python', 'r', 'js', 'ts', 'bash'])),
  packages: z.record(z.string(), z.string()),
  env: z.record(z.string(), z.string()),
  workdir: z.string().optional(),
  start: z.string().optional(),
  resources: z
    .object({
      memoryBytes: z.number().int().positive().optional(),
      milliCpus: z.number().int().positive().optional(),
    })
    .optional(),
  sizeBytes: z.number(),
  createdAt: z.string(),
})

const ID = /^[0-9a-f]{64}$/
/** A template's name: what E2B allows in an alias (lowercase letters, digits, `-`, `_`, `.`), not an id's shape. */
const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/

/** The folder of templates in an Analyst home. */
export function templatesRoot(home: string): string {
  return join(home, 'templates')
}

/** Throws unless `name` can name a template. */
export function checkTemplateName(name: string): void {
  if (!NAME.test(name) || /^[0-9a-f]{12,64}$/.test(name)) {
    throw new InvalidArgumentError(`"${name}" cannot name a template`, {
      hint: 'A name is 1 to 63 lowercase letters, digits, ".", "-" or "_", starting with a letter or digit, and does not look like a template id.',
    })
  }
}

export interface TemplateStore {
  /** ANALYST_HOME/templates. */
  readonly root: string
  /** Every built template, newest first. */
  list(): BuiltTemplate[]
  /** The template a name, an id or an unambiguous id prefix (12 characters or more) points at. */
  resolve(nameOrId: string): BuiltTemplate
  /** The template of this id, if it is built. */
  get(id: string): BuiltTemplate | undefined
  /**
   * Removes a name; with no name left on its template (or when given the id), the template too.
   * Returns what was removed.
   */
  remove(nameOrId: string): { name?: string; id?: string }
  /** Points `name` at the template `id` (moving it from another template, if it named one). */
  setName(name: string, id: string): void
  /**
   * Moves a complete template folder (its manifest written last) into the store as <id>, atomically.
   * A template already there with that id is replaced only when `replace` (a forced rebuild).
   */
  commit(folder: string, id: string, options?: { replace?: boolean }): BuiltTemplate
  /** A fresh folder in the store's file system, for a build to fill (renamed into place by `commit`). */
  scratch(prefix: string): string
}

/** The store under an Analyst home. Nothing is created until something is written. */
export function openTemplates(home: string): TemplateStore {
  const root = templatesRoot(home)
  const namesDir = join(root, 'names')

  const namesById = (): Map<string, string[]> => {
    const out = new Map<string, string[]>()
    for (const name of safeReaddir(namesDir)) {
      const id = nameTarget(name)
      if (id) out.set(id, [...(out.get(id) ?? []), name])
    }
    return out
  }

  const nameTarget = (name: string): string | undefined => {
    try {
      const id = basename(readlinkSync(join(namesDir, name)))
      return ID.test(id) ? id : undefined
    } catch {
      return undefined
    }
  }

  const read = (id: string, names?: string[]): BuiltTemplate | undefined => {
    const dir = join(root, id)
    let raw: string
    try {
      raw = readFileSync(join(dir, 'manifest.json'), 'utf8')
    } catch {
      return undefined
    }
    const parsed = manifestSchema.safeParse(JSON.parse(raw))
    if (!parsed.success || parsed.data.id !== id) return undefined
    const { hasRootfs, ...manifest } = parsed.data
    return {
      ...manifest,
      names: names ?? namesById().get(id) ?? [],
      dir,
      ...(hasRootfs ? { rootfs: join(dir, 'rootfs') } : {}),
    }
  }

  const get = (id: string) => (ID.test(id) ? read(id) : undefined)

  const list = (): BuiltTemplate[] => {
    const names = namesById()
    return safeReaddir(root)
      .filter((entry) => ID.test(entry))
      .map((id) => read(id, names.get(id) ?? []))
      .filter((template): template is BuiltTemplate => !!template)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
  }

  const find = (nameOrId: string): BuiltTemplate | undefined => {
    if (NAME.test(nameOrId)) {
      const id = nameTarget(nameOrId)
      const named = id && read(id)
      if (named) return named
    }
    if (ID.test(nameOrId)) return read(nameOrId)
    if (/^[0-9a-f]{12,63}$/.test(nameOrId)) {
      const matches = list().filter((template) => template.id.startsWith(nameOrId))
      if (matches.length === 1) return matches[0]
      if (matches.length > 1)
        throw new InvalidArgumentError(`"${nameOrId}" is the start of ${matches.length} template ids`, {
          hint: 'Give more of the id, or a name.',
        })
    }
    return undefined
  }

  const resolve = (nameOrId: string): BuiltTemplate => {
    const found = find(nameOrId)
    if (found) return found
    const known = list().flatMap((template) => template.names)
    throw new NotFoundError(`No template "${nameOrId}" is built here (${root})`, {
      hint:
        known.length > 0
          ? `The templates here: ${known.sort().join(', ')}. Build another with: analyst template build SPEC --name ${NAME.test(nameOrId) ? nameOrId : 'NAME'}`
          : `No template is built yet. Build one with: analyst template build SPEC --name ${NAME.test(nameOrId) ? nameOrId : 'NAME'} (or a recipe: analyst template build modern)`,
    })
  }

  const setName = (name: string, id: string) => {
    checkTemplateName(name)
    if (!read(id)) throw new NotFoundError(`No template ${id} to name "${name}"`)
    mkdirSync(namesDir, { recursive: true })
    // A new link beside, then renamed over the old: a reader sees the old target or the new one.
    const temp = join(namesDir, `.${name}.${randomBytes(4).toString('hex')}`)
    symlinkSync(join('..', id), temp)
    renameSync(temp, join(namesDir, name))
  }

  const removeFolder = (id: string) => {
    const dir = join(root, id)
    if (!existsSync(dir)) return
    // Out of the way first (no reader sees a template without its files), then deleted.
    const trash = join(root, `.trash-${id}-${randomBytes(4).toString('hex')}`)
    renameSync(dir, trash)
    rmSync(trash, { recursive: true, force: true })
  }

  const remove = (nameOrId: string): { name?: string; id?: string } => {
    const template = resolve(nameOrId)
    const byName = template.names.includes(nameOrId)
    if (byName) {
      rmSync(join(namesDir, nameOrId), { force: true })
      if (template.names.length > 1) return { name: nameOrId }
    } else {
      for (const name of template.names) rmSync(join(namesDir, name), { force: true })
    }
    removeFolder(template.id)
    return { ...(byName ? { name: nameOrId } : {}), id: template.id }
  }

  const commit = (folder: string, id: string, options: { replace?: boolean } = {}): BuiltTemplate => {
    const dir = join(root, id)
    if (existsSync(dir)) {
      if (!options.replace && read(id)) {
        rmSync(folder, { recursive: true, force: true })
        return read(id) as BuiltTemplate
      }
      removeFolder(id)
    }
    renameSync(folder, dir)
    const built = read(id)
    if (!built) throw new InvalidArgumentError(`The build of ${id} left no valid manifest.json`)
    return built
  }

  const scratch = (prefix: string): string => {
    mkdirSync(root, { recursive: true })
    const dir = join(root, `.${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`)
    mkdirSync(dir)
    return dir
  }

  return { root, list, resolve, get, remove, setName, commit, scratch }
}

/** The template a name or id points at, in the store under `home`; a NotFoundError naming those there are. */
export function resolveTemplate(home: string, nameOrId: string): BuiltTemplate {
  return openTemplates(home).resolve(nameOrId)
}

/** Writes a build's manifest.json: the last file of a template folder, the one that makes it a template. */
export function writeManifest(folder: string, manifest: TemplateManifest): void {
  const temp = join(folder, '.manifest.json')
  writeFileSync(temp, `${JSON.stringify(manifestSchema.parse(manifest), null, 2)}\n`)
  renameSync(temp, join(folder, 'manifest.json'))
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}
