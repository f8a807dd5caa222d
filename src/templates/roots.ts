/**
 * A build's starting root file system, by base: a Debian suite made by mmdebstrap from Debian's
 * archive (kept in the cache by its recipe, so that a changed layer above does not make it again),
 * an image from local podman storage (its file system, as `podman export` writes it), or a copy of
 * another template's root. (An image archive is read without podman: image-archive.ts.)
 * @module
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { SandboxError } from '../errors.js'
import { BUILDER_VERSION, canonicalJson, sha256 } from './identity.js'
import { holdLock } from './lock.js'
import { type CommandLimits, runCommand } from './process.js'
import { removeRoot } from './remove-root.js'
import { KERNEL_PACKAGES } from './steps.js'

export const DEBIAN_MIRROR = () => process.env.ANALYST_DEBIAN_MIRROR || 'http://deb.debian.org/debian'

export interface RootContext {
  cacheDir: string
  limits: CommandLimits
  signal?: AbortSignal
  onLog: (line: string) => void
}

/** What makes a Debian base: the cache's key and, so, part of the template's id. */
export function debianRecipe(suite: string, slim: boolean) {
  return {
    kind: 'debian',
    suite,
    variant: slim ? 'apt' : 'minbase',
    packages: [...KERNEL_PACKAGES, 'ca-certificates'],
    mirror: DEBIAN_MIRROR(),
    builder: BUILDER_VERSION,
  }
}

/** The cache entry (a folder in the cache) that holds a Debian suite's root. */
export function debianCacheEntry(suite: string, slim: boolean): string {
  return `debian-${suite}${slim ? '-slim' : ''}-${sha256(canonicalJson(debianRecipe(suite, slim))).slice(0, 16)}`
}

/** Documentation a -slim base leaves out, as Debian's own slim images do. */
const SLIM_EXCLUDES = [
  'path-exclude=/usr/share/man/*',
  'path-exclude=/usr/share/doc/*',
  'path-exclude=/usr/share/info/*',
  'path-exclude=/usr/share/locale/*',
  'path-include=/usr/share/locale/locale.alias',
]

/**
 * The cached root of a Debian suite with the kernel's packages and a user `user` (uid 1000, as
 * E2B's templates have), made once per recipe.
 */
export async function debianRoot(
  suite: string,
  slim: boolean,
  context: RootContext,
): Promise<{ root: string; cached: boolean }> {
  const dir = join(context.cacheDir, debianCacheEntry(suite, slim))
  if (existsSync(join(dir, 'rootfs'))) return { root: join(dir, 'rootfs'), cached: true }
  mkdirSync(context.cacheDir, { recursive: true })
  // Two builds on the same base at once (a server's queue and a CLI build, or test files) make it
  // once: the second waits for the first's root instead of running mmdebstrap beside it.
  const release = await holdLock(`${dir}.lock`, context.signal)
  try {
    if (existsSync(join(dir, 'rootfs'))) return { root: join(dir, 'rootfs'), cached: true }
    await makeDebianRoot(suite, slim, dir, context)
    return { root: join(dir, 'rootfs'), cached: false }
  } finally {
    release()
  }
}

async function makeDebianRoot(suite: string, slim: boolean, dir: string, context: RootContext) {
  const recipe = debianRecipe(suite, slim)
  const partial = join(context.cacheDir, `.partial-${randomBytes(6).toString('hex')}`)
  mkdirSync(partial)
  try {
    const result = await runCommand(
      [
        'mmdebstrap',
        `--variant=${recipe.variant}`,
        `--include=${recipe.packages.join(',')}`,
        '--aptopt=APT::Install-Recommends "false"',
        '--aptopt=APT::Install-Suggests "false"',
        // No fsync per unpacked file, here and in the apt steps above (the option stays in the
        // root's dpkg.cfg.d, as in Debian's container images): a failed build is thrown away whole.
        '--dpkgopt=force-unsafe-io',
        ...(slim ? SLIM_EXCLUDES.map((option) => `--dpkgopt=${option}`) : []),
        // The account E2B's templates run as, and sandboxes' uid.
        `--customize-hook=echo 'user:x:1000:1000::/home/user:/bin/bash' >> "$1/etc/passwd"; echo 'user:x:1000:' >> "$1/etc/group"; mkdir -p "$1/home/user"; chown 1000:1000 "$1/home/user"; echo build > "$1/etc/hostname"`,
        '--customize-hook=rm -f "$1/etc/resolv.conf"',
        suite,
        join(partial, 'rootfs'),
        recipe.mirror,
      ],
      { limits: context.limits, signal: context.signal, onLine: context.onLog },
    )
    if (result.code !== 0) {
      const reason = result.tail
        .filter((line) => /^E: |error/i.test(line))
        .slice(-3)
        .join(' ')
      throw new SandboxError(
        `mmdebstrap could not make a ${suite} root${result.timedOut ? ' in time' : result.aborted ? ' (cancelled)' : ''}: ${reason || result.tail.slice(-3).join(' ')}`,
        {
          hint: `Check that Debian's archive (${recipe.mirror}) can be reached, or set ANALYST_DEBIAN_MIRROR.`,
        },
      )
    }
    writeFileSync(join(partial, 'recipe.json'), `${JSON.stringify(recipe, null, 2)}\n`)
    try {
      renameSync(partial, dir)
    } catch {
      // made meanwhile by a builder that took no lock (another host sharing the cache): theirs serves
    }
  } finally {
    // A killed mmdebstrap leaves its mounts (the host's /dev/shm among them) in the partial root.
    removeRoot(partial)
  }
}

/** Copies a root (hard links would let a step's in-place write reach the cache). */
export async function copyRoot(from: string, to: string, context: RootContext): Promise<void> {
  const result = await runCommand(['cp', '-a', '--reflink=auto', from, to], {
    limits: context.limits,
    signal: context.signal,
  })
  if (result.code !== 0)
    throw new SandboxError(`Copying the base's root failed: ${result.tail.slice(-3).join(' ')}`)
}

/** The file system of a local podman image, unpacked into `to`. */
export async function imageRoot(image: string, to: string, context: RootContext): Promise<void> {
  const create = await runCommand(['podman', 'create', '--pull=never', image, '/bin/true'], {
    limits: context.limits,
    signal: context.signal,
  })
  const container = create.tail.at(-1)?.trim()
  if (create.code !== 0 || !container)
    throw new SandboxError(`podman could not use the image ${image}: ${create.tail.slice(-3).join(' ')}`)
  try {
    mkdirSync(to, { recursive: true })
    const result = await runCommand(
      [
        '/bin/bash',
        '-o',
        'pipefail',
        '-c',
        'podman export "$1" | tar -x --numeric-owner -C "$2"',
        'bash',
        container,
        to,
      ],
      { limits: context.limits, signal: context.signal, onLine: context.onLog },
    )
    if (result.code !== 0)
      throw new SandboxError(`Unpacking the image ${image} failed: ${result.tail.slice(-3).join(' ')}`)
  } finally {
    await runCommand(['podman', 'rm', '--force', container], { limits: { timeoutMs: 60_000 } })
  }
}
