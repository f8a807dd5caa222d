/**
 * Built templates for tests, without a build: a folder with a manifest (by default a trixie root
 * with Python 3.13.5 and nothing else), committed to the store under a home and named, as a build
 * leaves one. One helper for every test that needs a template to be there.
 * @module
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { openTemplates, type TemplateManifest, writeManifest } from '../../templates/store.js'
import type { BuiltTemplate } from '../../templates/types.js'

/** A manifest of `id`: a trixie root with Python 3.13.5, no packages, no env; `overrides` over it. */
export function templateManifest(id: string, overrides: Partial<TemplateManifest> = {}): TemplateManifest {
  return {
    id,
    base: { kind: 'debian', suite: 'trixie' },
    hasRootfs: true,
    python: { path: '/usr/bin/python3', version: '3.13.5' },
    languages: ['python'],
    packages: {},
    env: {},
    sizeBytes: 0,
    createdAt: new Date().toISOString(),
    ...overrides,
  }
}

/**
 * Commits a template of `id` to the store under `home` (its `rootfs` folder made when the
 * manifest has one; `fill` adds files to the folder first) and gives it `name`, if any.
 */
export function commitTemplate(
  home: string,
  id: string,
  options: {
    name?: string
    manifest?: Partial<TemplateManifest>
    fill?: (folder: string) => void
    /** Replaces a template of this id (a forced rebuild). */
    replace?: boolean
  } = {},
): BuiltTemplate {
  const store = openTemplates(home)
  const folder = store.scratch('build')
  const manifest = templateManifest(id, options.manifest)
  if (manifest.hasRootfs) mkdirSync(join(folder, 'rootfs'), { recursive: true })
  options.fill?.(folder)
  writeManifest(folder, manifest)
  const built = store.commit(folder, id, { replace: options.replace === true })
  if (options.name) store.setName(options.name, id)
  return options.name ? (store.get(id) as BuiltTemplate) : built
}
