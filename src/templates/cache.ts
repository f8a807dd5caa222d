/**
 * The build cache (base roots by recipe, apt layers; roots.ts and build.ts) and its pruning. A
 * template is a copy of what it was built from, so the cache only speeds up rebuilds: an entry that
 * no built template came from (each records its entries in cache.json) can go. `analyst template
 * prune` removes those (with `all`, unnamed templates first), and a build prunes them itself once
 * the cache is past ANALYST_TEMPLATE_CACHE_MB.
 * @module
 */
import { execFile, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { openTemplates, templatesRoot } from './store.js'
import type { BuiltTemplate } from './types.js'

/** The file in a template's folder that names the cache entries it was built from. */
export const CACHE_RECORD = 'cache.json'

/** The cache's bound, past which a build prunes it. @default 10 GiB */
export const DEFAULT_CACHE_MB = 10 * 1024

/** A partial entry older than this is a build that died, not one under way. */
const STALE_PARTIAL_MS = 24 * 3600_000

/** Where base roots and layers are cached: ANALYST_TEMPLATE_CACHE, else ANALYST_HOME/templates/cache. */
export function templateCacheDir(home: string, env: NodeJS.ProcessEnv = process.env): string {
  return env.ANALYST_TEMPLATE_CACHE || join(templatesRoot(home), 'cache')
}

/** Bytes on disk under each path (du, which walks a root file system far faster than Node). */
export function diskBytes(paths: readonly string[]): number {
  if (paths.length === 0) return 0
  const result = spawnSync('du', ['-s', '-B1', '--', ...paths], { encoding: 'utf8', timeout: 600_000 })
  return (result.stdout ?? '')
    .split('\n')
    .map((line) => Number(line.split('\t')[0]))
    .filter(Number.isFinite)
    .reduce((sum, bytes) => sum + bytes, 0)
}

/** The entries a template came from; undefined for one built before they were recorded. */
function recordedEntries(template: BuiltTemplate): string[] | undefined {
  try {
    const parsed = JSON.parse(readFileSync(join(template.dir, CACHE_RECORD), 'utf8')) as { entries?: unknown }
    return Array.isArray(parsed.entries) ? parsed.entries.filter((e) => typeof e === 'string') : undefined
  } catch {
    return undefined
  }
}

/** Whether a template without a record may have come from this entry (its Debian suite's root). */
function mayHaveUsed(template: BuiltTemplate, entry: string): boolean {
  return template.base.kind === 'debian' && entry.startsWith(`debian-${template.base.suite}-`)
}

export interface PruneResult {
  /** Cache entries removed, with their size. */
  entries: Array<{ name: string; bytes: number }>
  /** Templates removed (`all`): those no name pointed at. */
  templates: Array<{ id: string; bytes: number }>
  freedBytes: number
}

export interface PruneOptions {
  home: string
  env?: NodeJS.ProcessEnv
  /** @default templateCacheDir(home, env) */
  cacheDir?: string
  /** Unnamed templates go too (then what only they came from). */
  all?: boolean
}

/** Removes the cache entries no built template came from (and, with `all`, unnamed templates first). */
export function pruneTemplates(options: PruneOptions): PruneResult {
  const store = openTemplates(options.home)
  const cacheDir = options.cacheDir ?? templateCacheDir(options.home, options.env)
  const templates: PruneResult['templates'] = []
  if (options.all) {
    for (const template of store.list().filter((t) => t.names.length === 0)) {
      const bytes = diskBytes([template.dir])
      store.remove(template.id)
      templates.push({ id: template.id, bytes })
    }
  }
  const kept = store.list()
  const used = new Set(kept.flatMap((template) => recordedEntries(template) ?? []))
  const unrecorded = kept.filter((template) => recordedEntries(template) === undefined)
  const entries: PruneResult['entries'] = []
  let names: string[]
  try {
    names = readdirSync(cacheDir)
  } catch {
    names = []
  }
  for (const name of names) {
    const path = join(cacheDir, name)
    // A build's lock on a base it is making (lock.ts): tiny, and a dead holder's is taken over.
    if (name.endsWith('.lock')) continue
    if (name.startsWith('.partial-') || name.includes('.partial-')) {
      // A build under way writes there: only one that died long ago is removed.
      if (Date.now() - statSync(path).mtimeMs < STALE_PARTIAL_MS) continue
    } else if (used.has(name) || unrecorded.some((template) => mayHaveUsed(template, name))) continue
    const bytes = diskBytes([path])
    rmSync(path, { recursive: true, force: true })
    entries.push({ name, bytes })
  }
  const freedBytes = [...entries, ...templates].reduce((sum, item) => sum + item.bytes, 0)
  return { entries, templates, freedBytes }
}

/** The bound in bytes: ANALYST_TEMPLATE_CACHE_MB, else the default. */
export function cacheBoundBytes(env: NodeJS.ProcessEnv = process.env): number {
  const mb = Number(env.ANALYST_TEMPLATE_CACHE_MB)
  return (Number.isFinite(mb) && mb > 0 ? mb : DEFAULT_CACHE_MB) * 1024 ** 2
}

/** The cache's size, measured without holding up the event loop (a server answers meanwhile). */
function cacheBytes(dir: string): Promise<number> {
  return new Promise((resolve) =>
    execFile('du', ['-s', '-B1', '--', dir], { timeout: 600_000 }, (_error, stdout) =>
      resolve(Number(String(stdout).split('\t')[0]) || 0),
    ),
  )
}

/**
 * After a build: past its bound, the cache loses what no template came from. Only the home's own
 * cache: one that ANALYST_TEMPLATE_CACHE names may serve other homes, whose templates this one
 * does not see (`analyst template prune` still prunes it when asked). Never fails the build.
 */
export async function pruneAfterBuild(options: {
  home: string
  env?: NodeJS.ProcessEnv
  cacheDir: string
  onLog?: (line: string) => void
}): Promise<PruneResult | undefined> {
  try {
    if (options.cacheDir !== join(templatesRoot(options.home), 'cache')) return undefined
    const bound = cacheBoundBytes(options.env ?? process.env)
    const size = await cacheBytes(options.cacheDir)
    if (size <= bound) return undefined
    const result = pruneTemplates({ home: options.home, env: options.env, cacheDir: options.cacheDir })
    options.onLog?.(
      `The build cache was ${Math.round(size / 1024 ** 2)} MiB, over ANALYST_TEMPLATE_CACHE_MB (${Math.round(bound / 1024 ** 2)}): ${result.entries.length} unused entries removed, ${Math.round(result.freedBytes / 1024 ** 2)} MiB freed`,
    )
    return result
  } catch {
    return undefined // a cache that could not be pruned costs disk, not the build
  }
}
