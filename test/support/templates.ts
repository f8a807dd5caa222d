/**
 * A Debian trixie template for tests (Python 3.13, pandas 2), made once and kept under the repo's
 * gitignored .cache/ so that later runs (and CI's second run, which restores .cache) take it in a
 * moment: mmdebstrap's root file system, then a template folder committed to a store there.
 * @module
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { removeRoot } from '../../src/templates/remove-root.js'
import { openTemplates, type TemplateStore, writeManifest } from '../../src/templates/store.js'
import type { BuiltTemplate } from '../../src/templates/types.js'

const run = promisify(execFile)

/**
 * The repo's .cache when other users can reach it, else a folder under /var/tmp (a clone in a
 * mkdtemp folder, or under /root). Sandboxes reach a template behind a closed folder too
 * (template-reach.ts binds it as root); /var/tmp keeps the cache between stress runs' clones.
 */
function reachableCache(): string {
  const cache = join(import.meta.dirname, '..', '..', '.cache')
  let path = ''
  for (const part of dirname(cache).split('/').filter(Boolean)) {
    path += `/${part}`
    if ((statSync(path).mode & 0o001) === 0) return `/var/tmp/analyst-test-cache-${process.getuid?.() ?? 0}`
  }
  return cache
}
const CACHE = reachableCache()
/** The Analyst home whose store holds the test templates. */
export const TEMPLATE_HOME = join(CACHE, 'analyst-home')
export const TRIXIE = 'test-trixie'
const PACKAGES = [
  'python3',
  'python3-venv',
  'python3-pip',
  'python3-pandas',
  'python3-matplotlib',
  'python3-ipython',
  'iproute2',
]
const MIRROR = process.env.ANALYST_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian'

/** Whether templates can be made here: mmdebstrap and root (its rootfs keeps root's ownership). */
export const canMakeTemplates = process.getuid?.() === 0 && existsSync('/usr/bin/mmdebstrap')

let made: Promise<BuiltTemplate> | undefined

/** The trixie test template, made if it is not in the cache yet (about a minute, once). */
export function trixieTemplate(): Promise<BuiltTemplate> {
  made ??= make()
  return made
}

async function make(): Promise<BuiltTemplate> {
  const store = openTemplates(TEMPLATE_HOME)
  const spec = JSON.stringify({ base: { kind: 'debian', suite: 'trixie' }, packages: PACKAGES })
  const id = createHash('sha256').update(spec).digest('hex')
  const existing = store.get(id)
  if (existing) return existing
  // Test files run in several processes: one builds, the others wait for its template.
  const lock = join(CACHE, `template-${id.slice(0, 12)}.lock`)
  mkdirSync(CACHE, { recursive: true })
  for (;;) {
    try {
      mkdirSync(lock)
      writeFileSync(join(lock, 'pid'), String(process.pid))
      break
    } catch {
      const built = store.get(id)
      if (built) return built
      // A builder that died leaves its lock: taken over.
      if (!alive(Number(readFileSync(join(lock, 'pid'), { encoding: 'utf8', flag: 'a+' }))))
        rmSync(lock, { recursive: true, force: true })
      await sleep(1000)
    }
  }
  try {
    return store.get(id) ?? (await build(store, id))
  } finally {
    rmSync(lock, { recursive: true, force: true })
  }
}

async function build(store: TemplateStore, id: string): Promise<BuiltTemplate> {
  const folder = store.scratch('test-build')
  try {
    const rootfs = join(folder, 'rootfs')
    await run(
      'mmdebstrap',
      [
        '--quiet',
        '--variant=apt',
        `--include=${PACKAGES.join(',')}`,
        // No fsync per unpacked file: a throwaway root, and much faster on a busy disk.
        '--dpkgopt=force-unsafe-io',
        'trixie',
        rootfs,
        MIRROR,
      ],
      { timeout: 1_500_000, maxBuffer: 64 << 20 },
    )
    const python = readdirSync(join(rootfs, 'usr/bin')).find((name) => /^python3\.\d+$/.test(name)) as string
    writeManifest(folder, {
      id,
      base: { kind: 'debian', suite: 'trixie' },
      hasRootfs: true,
      python: { path: `/usr/bin/${python}`, version: python.slice('python'.length) },
      languages: ['python'],
      packages: debianVersions(rootfs, {
        pandas: 'python3-pandas',
        numpy: 'python3-numpy',
        matplotlib: 'python3-matplotlib',
        ipython: 'python3-ipython',
      }),
      env: { ANALYST_TEMPLATE_TEST: 'trixie' },
      sizeBytes: 0,
      createdAt: new Date().toISOString(),
    })
    const built = store.commit(folder, id)
    store.setName(TRIXIE, id)
    return { ...built, names: [TRIXIE] }
  } catch (error) {
    // A killed mmdebstrap leaves its mounts (the host's /dev/shm among them) in the root.
    removeRoot(folder)
    throw error
  }
}

function alive(pid: number): boolean {
  if (!pid) return false
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Upstream versions of Debian packages in a root file system (1:2.2.3+dfsg-8 → 2.2.3). */
function debianVersions(rootfs: string, names: Record<string, string>): Record<string, string> {
  const status = readFileSync(join(rootfs, 'var/lib/dpkg/status'), 'utf8')
  const versions: Record<string, string> = {}
  for (const stanza of status.split('\n\n')) {
    const name = /^Package: (.+)$/m.exec(stanza)?.[1]
    const version = /^Version: (.+)$/m.exec(stanza)?.[1]
    const module = Object.keys(names).find((key) => names[key] === name)
    if (module && version) versions[module] = version.replace(/^\d+:/, '').replace(/[+~-].*$/, '')
  }
  return versions
}
