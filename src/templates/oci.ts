/**
 * A template as an OCI image archive, and back: an image layout (oci-layout, index.json, blobs)
 * in one tar, whose single layer is the template's root (or, over the host, its venv at
 * /opt/venv), whose config carries the template's environment and working directory, and whose
 * manifest carries the template's own manifest as an annotation. `podman load` takes it as an
 * image; `importTemplate` takes it back as the same template, checking every blob's digest and
 * the id. GNU tar writes and reads the layer (owners, modes, links, xattrs as they are).
 * @module
 */
import { createHash } from 'node:crypto'
import {
  createReadStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { InvalidArgumentError, SandboxError } from '../errors.js'
import { runCommand } from './process.js'
import { VENV } from './steps.js'
import { openTemplates, type TemplateManifest, writeManifest } from './store.js'
import type { BuiltTemplate } from './types.js'

/** The annotation that holds the template's manifest (JSON). */
export const MANIFEST_ANNOTATION = 'dev.analyst.template.manifest'
const ID_LABEL = 'dev.analyst.template.id'

const LAYER_TYPE = 'application/vnd.oci.image.layer.v1.tar'
const CONFIG_TYPE = 'application/vnd.oci.image.config.v1+json'
const MANIFEST_TYPE = 'application/vnd.oci.image.manifest.v1+json'

const NO_TIME_LIMIT = { timeoutMs: 6 * 60 * 60_000 }

async function fileDigest(path: string): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer)
  return hash.digest('hex')
}

async function tar(args: string[], what: string) {
  const result = await runCommand(['tar', ...args], { limits: NO_TIME_LIMIT })
  if (result.code !== 0) throw new SandboxError(`${what} failed: ${result.tail.slice(-3).join(' ')}`)
}

/** Writes `template` to `out` as an OCI image archive, tagged `localhost/analyst-template-<name>:<id12>` for podman. */
export async function exportTemplate(
  template: BuiltTemplate,
  out: string,
  home: string,
): Promise<{ bytes: number }> {
  const store = openTemplates(home)
  const layout = store.scratch('export')
  try {
    const blobs = join(layout, 'blobs', 'sha256')
    mkdirSync(blobs, { recursive: true })
    const writeBlob = (text: string) => {
      const digest = createHash('sha256').update(text).digest('hex')
      writeFileSync(join(blobs, digest), text)
      return { digest: `sha256:${digest}`, size: Buffer.byteLength(text) }
    }
    // The layer: the root as /, or the venv where sandboxes mount it.
    const layerFile = join(layout, 'layer.tar')
    if (template.rootfs)
      await tar(
        ['-c', '-f', layerFile, '--numeric-owner', '--xattrs', '--sort=name', '-C', template.rootfs, '.'],
        'Packing the root',
      )
    else if (!existsSync(join(template.dir, 'venv')))
      // Over the host's Python with no pip layer (env, workdir, start only): no venv, an empty layer.
      await tar(['-c', '-f', layerFile, '-T', '/dev/null'], 'Packing the empty layer')
    else
      await tar(
        [
          '-c',
          '-f',
          layerFile,
          '--numeric-owner',
          '--sort=name',
          `--transform=s,^\\.,${VENV.slice(1)},`,
          '-C',
          join(template.dir, 'venv'),
          '.',
        ],
        'Packing the venv',
      )
    const layerDigest = await fileDigest(layerFile)
    const layerSize = statSync(layerFile).size
    renameSync(layerFile, join(blobs, layerDigest))
    const manifest = JSON.parse(readFileSync(join(template.dir, 'manifest.json'), 'utf8')) as TemplateManifest
    const config = writeBlob(
      JSON.stringify({
        created: template.createdAt,
        architecture: ociArch(),
        os: 'linux',
        config: {
          Env: Object.entries(template.env).map(([name, value]) => `${name}=${value}`),
          ...(template.workdir ? { WorkingDir: template.workdir } : {}),
          Cmd: [template.python.path],
          Labels: { [ID_LABEL]: template.id },
        },
        rootfs: { type: 'layers', diff_ids: [`sha256:${layerDigest}`] },
        history: [{ created: template.createdAt, created_by: `analyst template build (${template.id})` }],
      }),
    )
    const imageManifest = writeBlob(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: MANIFEST_TYPE,
        config: { mediaType: CONFIG_TYPE, ...config },
        layers: [{ mediaType: LAYER_TYPE, digest: `sha256:${layerDigest}`, size: layerSize }],
        annotations: { [MANIFEST_ANNOTATION]: JSON.stringify(manifest) },
      }),
    )
    const name = template.names[0] ?? 'template'
    writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }))
    writeFileSync(
      join(layout, 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.index.v1+json',
        manifests: [
          {
            mediaType: MANIFEST_TYPE,
            ...imageManifest,
            annotations: {
              'org.opencontainers.image.ref.name': `localhost/analyst-template-${name}:${template.id.slice(0, 12)}`,
            },
          },
        ],
      }),
    )
    const partial = `${out}.partial`
    await tar(['-c', '-f', partial, '-C', layout, 'oci-layout', 'index.json', 'blobs'], `Writing ${out}`)
    renameSync(partial, out)
    return { bytes: statSync(out).size }
  } finally {
    rmSync(layout, { recursive: true, force: true })
  }
}

function ociArch(): string {
  return (
    { x64: 'amd64', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x' }[process.arch as string] ??
    process.arch
  )
}

/** Reads an archive `exportTemplate` wrote into the store (under `name`, if given); the same id as it was exported with. */
export async function importTemplate(
  file: string,
  home: string,
  name?: string,
): Promise<{ template: BuiltTemplate; existed: boolean }> {
  if (!existsSync(file)) throw new InvalidArgumentError(`No file ${file} to import`)
  const store = openTemplates(home)
  const scratch = store.scratch('import')
  let committed = false
  try {
    const layout = join(scratch, 'layout')
    mkdirSync(layout)
    await tar(['-x', '-f', file, '-C', layout, '--no-same-owner'], `Reading ${file}`)
    const notOurs = new InvalidArgumentError(`${file} is not a template that analyst template export wrote`, {
      hint: 'To start a template from another image archive, build one with base: archive:PATH.',
    })
    const readJson = (path: string): Record<string, unknown> => {
      try {
        return JSON.parse(readFileSync(path, 'utf8'))
      } catch {
        throw notOurs
      }
    }
    const blob = async (digest: unknown): Promise<string> => {
      const hex = typeof digest === 'string' ? /^sha256:([0-9a-f]{64})$/.exec(digest)?.[1] : undefined
      const path = hex && join(layout, 'blobs', 'sha256', hex)
      if (!hex || !path || !existsSync(path)) throw notOurs
      if ((await fileDigest(path)) !== hex)
        throw new InvalidArgumentError(`${file} is damaged: the blob ${digest} does not match its digest`)
      return path
    }
    const index = readJson(join(layout, 'index.json')) as {
      manifests?: Array<{ digest?: string; annotations?: Record<string, string> }>
    }
    // The name it was exported under, unless another is given.
    const ref = index.manifests?.[0]?.annotations?.['org.opencontainers.image.ref.name']
    const exportedName = ref ? /analyst-template-([a-z0-9][a-z0-9._-]*):/.exec(ref)?.[1] : undefined
    if (!name && exportedName && exportedName !== 'template') name = exportedName
    const imageManifest = readJson(await blob(index.manifests?.[0]?.digest)) as {
      config?: { digest?: string }
      layers?: Array<{ digest?: string }>
      annotations?: Record<string, string>
    }
    const annotation = imageManifest.annotations?.[MANIFEST_ANNOTATION]
    if (!annotation || imageManifest.layers?.length !== 1) throw notOurs
    const manifest = JSON.parse(annotation) as TemplateManifest
    const config = readJson(await blob(imageManifest.config?.digest)) as {
      config?: { Labels?: Record<string, string> }
    }
    if (!/^[0-9a-f]{64}$/.test(manifest.id) || config.config?.Labels?.[ID_LABEL] !== manifest.id)
      throw new InvalidArgumentError(`${file} says two things about its template's id`, {
        hint: 'Export the template again with analyst template export.',
      })
    const existing = store.get(manifest.id)
    if (existing) {
      if (name) store.setName(name, manifest.id)
      return { template: store.get(manifest.id) as BuiltTemplate, existed: true }
    }
    const layer = await blob(imageManifest.layers[0]?.digest)
    const folder = join(scratch, 'template')
    const target = manifest.hasRootfs ? join(folder, 'rootfs') : folder
    mkdirSync(target, { recursive: true })
    await tar(
      ['-x', '-f', layer, '-C', target, '--numeric-owner', '--xattrs', '--same-permissions'],
      'Unpacking the layer',
    )
    if (!manifest.hasRootfs && existsSync(join(folder, VENV.slice(1))))
      renameSync(join(folder, VENV.slice(1)), join(folder, 'venv'))
    if (!manifest.hasRootfs)
      rmSync(join(folder, VENV.slice(1).split('/')[0] as string), { recursive: true, force: true })
    writeManifest(folder, manifest)
    const template = store.commit(folder, manifest.id)
    committed = true
    if (name) store.setName(name, manifest.id)
    return { template: store.get(template.id) as BuiltTemplate, existed: false }
  } finally {
    if (!committed || existsSync(scratch)) rmSync(scratch, { recursive: true, force: true })
  }
}
