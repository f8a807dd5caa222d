/**
 * Bases by name, as a spec's `base:` or a Containerfile's FROM gives them: `host`, `debian:<suite>`
 * (`-slim`), `template:NAME`, `archive:PATH`, or an image in local podman storage. No registry can
 * be reached here, so an image that is not stored locally is refused at once, saying what works.
 * @module
 */
import { spawnSync } from 'node:child_process'
import { InvalidArgumentError } from '../errors.js'
import type { RecipeBase } from './steps.js'

/** The suites Debian's archive serves (and their aliases), which mmdebstrap can make a root of. */
export const DEBIAN_SUITES = [
  'bullseye',
  'bookworm',
  'trixie',
  'forky',
  'sid',
  'oldstable',
  'stable',
  'testing',
  'unstable',
]

export const BASES_THAT_WORK =
  "host (the host's Python), debian:<suite> or debian:<suite>-slim (made from Debian's archive; suites: bookworm, trixie, forky, sid, stable, testing), template:NAME (a template built here), archive:PATH (an OCI or docker image archive, read without podman), or an image already in local podman storage (podman images)"

/** The base a name means, without looking anything up (see `checkBase`). */
export function parseBase(text: string): RecipeBase {
  const name = text.trim()
  if (name === 'host') return { kind: 'host' }
  const debian = /^(?:(?:docker\.io\/)?(?:library\/)?)debian(?::([a-z]+?)(-slim)?)?$/.exec(name)
  if (debian) {
    const suite = debian[1] ?? 'stable'
    if (!DEBIAN_SUITES.includes(suite)) {
      throw new InvalidArgumentError(`debian:${suite} is not a suite Debian's archive serves`, {
        hint: `Use one of: ${DEBIAN_SUITES.map((s) => `debian:${s}`).join(', ')} (each also as -slim).`,
      })
    }
    return { kind: 'debian', suite, slim: debian[2] === '-slim' }
  }
  const prefixed = /^(template|archive|oci-archive|docker-archive|image|containers-storage):(.+)$/.exec(name)
  if (prefixed) {
    const [, prefix, rest] = prefixed as unknown as [string, string, string]
    if (prefix === 'template') return { kind: 'template', name: rest }
    if (prefix === 'image' || prefix === 'containers-storage') return { kind: 'image', image: rest }
    return { kind: 'archive', path: rest }
  }
  if (/\.tar(\.gz)?$/.test(name) && (name.startsWith('/') || name.startsWith('.')))
    return { kind: 'archive', path: name }
  if (!name || /\s/.test(name)) {
    throw new InvalidArgumentError(`"${name}" is not a base`, {
      hint: `A base is one of: ${BASES_THAT_WORK}.`,
    })
  }
  return { kind: 'image', image: name }
}

/** The local podman image's id, or undefined when podman has no such image (or no podman is here). */
export function localImageId(image: string): string | undefined {
  const result = spawnSync('podman', ['image', 'inspect', '--format', '{{.Id}}', image], {
    encoding: 'utf8',
    timeout: 30_000,
  })
  if (result.status !== 0) return undefined
  return result.stdout.trim() || undefined
}

/** Whether podman is installed here (an image in its storage can be read only through it). */
function hasPodman(): boolean {
  return spawnSync('podman', ['--version'], { timeout: 30_000 }).status === 0
}

/** Throws at once for an image base that is in no local storage: no registry is reachable. */
export function refuseRegistryImage(image: string): never {
  if (!hasPodman())
    throw new InvalidArgumentError(
      `The base image ${image} is not in local podman storage (podman is not installed here), and no registry can be reached`,
      {
        hint: `Save the image to a file where it is (podman save or docker save) and start from base: archive:PATH, which needs no podman. Bases that work: ${BASES_THAT_WORK}.`,
      },
    )
  throw new InvalidArgumentError(
    `The base image ${image} is not in local podman storage, and no registry can be reached`,
    {
      hint: `Bases that work: ${BASES_THAT_WORK}. For a Debian base, debian:trixie or debian:bookworm-slim is made from Debian's archive.`,
    },
  )
}
