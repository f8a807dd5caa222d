/**
 * An image archive's root file system, read without podman: an OCI image layout in a tar (what
 * `analyst template export`, `podman save --format oci-archive` and `docker save` since 25 write)
 * or a docker-archive (`podman save`'s and older `docker save`'s default). Its layers are unpacked
 * in order, each over the ones before, with their whiteouts: `.wh.NAME` removes NAME, and
 * `.wh..wh..opq` empties its folder of what lower layers put there. The archive is untrusted:
 * node-tar unpacks it (no `..`, no absolute paths, never through a symbolic link, files replaced
 * rather than written through), a path that would leave the root fails the build, a whiteout never
 * follows a link, and device nodes are not made (the jail has its own /dev).
 * @module
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { extract, type ReadEntry } from 'tar'
import { InvalidArgumentError } from '../errors.js'

export interface ArchiveContext {
  onLog: (line: string) => void
  signal?: AbortSignal
}

const WHITEOUT = '.wh.'
const OPAQUE = '.wh..wh..opq'
const INDEX_TYPES = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
]

/** The archive's parts, as the tar names them: its JSON files and its layers (paths in the unpacked archive). */
function layersOf(dir: string, file: string): string[] {
  const notImage = (why: string) =>
    new InvalidArgumentError(`${file} is not an image archive that can be read here: ${why}`, {
      hint: 'Give a file that podman save, docker save or analyst template export wrote (an OCI archive or a docker-archive, uncompressed layers or gzip).',
    })
  const json = (path: string): unknown => {
    try {
      return JSON.parse(readFileSync(join(dir, path), 'utf8'))
    } catch {
      throw notImage(`${path} is missing or not JSON`)
    }
  }
  const blob = (digest: unknown): string => {
    const hex = typeof digest === 'string' ? /^sha256:([0-9a-f]{64})$/.exec(digest)?.[1] : undefined
    if (!hex) throw notImage(`the digest ${String(digest)} is not a sha256 one`)
    return join('blobs', 'sha256', hex)
  }
  if (exists(join(dir, 'index.json'))) {
    type Descriptor = { mediaType?: string; digest?: string; platform?: { os?: string } }
    let descriptor = (json('index.json') as { manifests?: Descriptor[] }).manifests?.[0]
    // An index of platforms: the first Linux one.
    for (
      let depth = 0;
      descriptor && INDEX_TYPES.includes(descriptor.mediaType ?? '') && depth < 4;
      depth++
    ) {
      const manifests = (json(blob(descriptor.digest)) as { manifests?: Descriptor[] }).manifests ?? []
      descriptor = manifests.find((m) => m.platform?.os === 'linux') ?? manifests[0]
    }
    if (!descriptor) throw notImage('its index.json lists no image')
    const manifest = json(blob(descriptor.digest)) as { layers?: Array<{ digest?: string }> }
    if (!Array.isArray(manifest.layers)) throw notImage('its manifest lists no layers')
    return manifest.layers.map((layer) => blob(layer.digest))
  }
  const manifest = json('manifest.json') as Array<{ Layers?: unknown }> | undefined
  const layers = Array.isArray(manifest) ? manifest[0]?.Layers : undefined
  if (!Array.isArray(layers) || !layers.every((layer) => typeof layer === 'string'))
    throw notImage('its manifest.json lists no layers')
  return layers.map((layer) => {
    if (layer.split('/').includes('..') || layer.startsWith('/'))
      throw notImage(`the layer ${layer} is outside it`)
    return layer
  })
}

function exists(path: string): boolean {
  try {
    lstatSync(path)
    return true
  } catch {
    return false
  }
}

/** An entry's path as parts under the root; throws for one that would leave it. */
function partsOf(path: string, file: string): string[] {
  const parts = path.split('/').filter((part) => part !== '' && part !== '.')
  if (parts.includes('..'))
    throw new InvalidArgumentError(`The image archive ${file} has a path that leaves the root: ${path}`, {
      hint: 'An image whose layers write outside their root is refused; rebuild it with a tool that writes plain paths.',
    })
  return parts
}

/** Removes `parts` under `root` (a whiteout's target), unless a folder on the way is a link: never outside the root. */
function removeUnder(root: string, parts: string[]) {
  let path = root
  for (const part of parts.slice(0, -1)) {
    path = join(path, part)
    try {
      if (!lstatSync(path).isDirectory()) return
    } catch {
      return
    }
  }
  rmSync(join(path, parts.at(-1) as string), { recursive: true, force: true })
}

/** Unpacks the image archive `file` as a root file system into `to`, layer by layer. */
export async function archiveRoot(file: string, to: string, context: ArchiveContext): Promise<void> {
  const scratch = `${to}.archive`
  mkdirSync(scratch, { recursive: true })
  try {
    // The archive itself: its JSON files and layer blobs (no owners; links only within it, as
    // docker save writes for a layer twice).
    await extract({
      file,
      cwd: scratch,
      preserveOwner: false,
      filter: (_path, entry) =>
        ['File', 'OldFile', 'Directory', 'SymbolicLink'].includes((entry as ReadEntry).type),
    })
    const layers = layersOf(scratch, file)
    mkdirSync(to, { recursive: true })
    for (const [i, layer] of layers.entries()) {
      context.signal?.throwIfAborted()
      context.onLog(`Unpacking layer ${i + 1}/${layers.length} (${layer})`)
      await unpackLayer(join(scratch, layer), to, file, context)
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

async function unpackLayer(layer: string, root: string, file: string, context: ArchiveContext) {
  if (!exists(layer))
    throw new InvalidArgumentError(
      `The image archive ${file} lacks its layer ${layer.split('/').slice(-3).join('/')}`,
    )
  /** Paths this layer wrote: an opaque folder keeps them, and loses only what lower layers put there. */
  const written = new Set<string>()
  let refused: unknown
  const skipped: string[] = []
  await extract({
    file: layer,
    cwd: root,
    unlink: true,
    filter: (path, entry) => {
      if (refused) return false
      let parts: string[]
      try {
        parts = partsOf(path, file)
      } catch (error) {
        refused = error
        return false
      }
      const name = parts.at(-1) ?? ''
      const type = (entry as ReadEntry).type
      if (name === OPAQUE) {
        const dir = parts.slice(0, -1)
        const prefix = dir.join('/')
        let children: string[] = []
        try {
          children = readdirSync(join(root, ...dir))
        } catch {}
        for (const child of children) {
          const path = prefix ? `${prefix}/${child}` : child
          if (![...written].some((kept) => kept === path || kept.startsWith(`${path}/`)))
            removeUnder(root, [...dir, child])
        }
        return false
      }
      if (name.startsWith(WHITEOUT)) {
        removeUnder(root, [...parts.slice(0, -1), name.slice(WHITEOUT.length)])
        return false
      }
      if (type === 'CharacterDevice' || type === 'BlockDevice' || type === 'FIFO') {
        skipped.push(parts.join('/'))
        return false
      }
      written.add(parts.join('/'))
      return true
    },
  })
  if (refused) throw refused
  if (skipped.length > 0)
    context.onLog(
      `Not made (devices come from the sandbox's own /dev): ${skipped.slice(0, 5).join(', ')}${skipped.length > 5 ? ', …' : ''}`,
    )
}
