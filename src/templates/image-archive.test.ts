import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { create, Header } from 'tar'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { commitTemplate } from '../test/support/templates.js'
import { refuseRegistryImage } from './base.js'
import { archiveRoot } from './image-archive.js'
import { exportTemplate, importTemplate } from './oci.js'

let work: string
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'analyst-image-archive-'))
})
afterAll(() => rmSync(work, { recursive: true, force: true }))

/** A folder of files (and links, given as `-> target`) under `dir`. */
function tree(dir: string, files: Record<string, string>) {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true })
    if (content.startsWith('-> ')) symlinkSync(content.slice(3), join(dir, path))
    else writeFileSync(join(dir, path), content)
  }
}

/** A tar of one entry that no tool would write from a folder (a path with `..`, a device node). */
function crafted(path: string, type: 'File' | 'CharacterDevice'): Buffer {
  const header = new Header({ path, type, size: 0, mode: 0o644, mtime: new Date(0), devmaj: 1, devmin: 3 })
  header.encode()
  return Buffer.concat([header.block as Buffer, Buffer.alloc(1024)])
}

/** A docker-archive (as `docker save` writes it) whose layers are the given folders' tars, in order. */
async function dockerArchive(
  name: string,
  layers: Array<string | Buffer>,
  gzipLast = false,
): Promise<string> {
  const dir = join(work, `${name}.d`)
  const paths: string[] = []
  for (const [i, layer] of layers.entries()) {
    mkdirSync(join(dir, `l${i}`), { recursive: true })
    const file = join(dir, `l${i}`, 'layer.tar')
    if (Buffer.isBuffer(layer)) writeFileSync(file, layer)
    else await create({ file, cwd: layer, gzip: gzipLast && i === layers.length - 1, portable: true }, ['.'])
    paths.push(`l${i}/layer.tar`)
  }
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ architecture: 'amd64', os: 'linux' }))
  writeFileSync(
    join(dir, 'manifest.json'),
    JSON.stringify([{ Config: 'config.json', RepoTags: [`${name}:latest`], Layers: paths }]),
  )
  const out = join(work, `${name}.tar`)
  await create({ file: out, cwd: dir }, [
    'manifest.json',
    'config.json',
    ...paths.map((p) => p.split('/')[0] as string),
  ])
  return out
}

const logs: string[] = []
const context = { onLog: (line: string) => void logs.push(line) }

describe('image archives without podman', () => {
  it('reads the OCI archive that analyst template export writes', async () => {
    const home = join(work, 'home')
    const id = 'a'.repeat(64)
    const template = commitTemplate(home, id, {
      name: 'tiny',
      fill: (folder) =>
        tree(join(folder, 'rootfs'), {
          'etc/os-release': 'ID=tiny\n',
          'usr/bin/tool': '#!/bin/sh\necho tool\n',
          'usr/bin/alias': '-> tool',
        }),
    })
    const out = join(work, 'tiny.tar')
    await exportTemplate(template, out, home)

    const root = join(work, 'from-oci')
    await archiveRoot(out, root, context)
    expect(readFileSync(join(root, 'etc/os-release'), 'utf8')).toBe('ID=tiny\n')
    expect(readlinkSync(join(root, 'usr/bin/alias'))).toBe('tool')
    expect(existsSync(`${root}.archive`)).toBe(false)
  })

  it('exports and imports a template over the host with no pip layer (no venv): the same id, still no venv', async () => {
    const home = join(work, 'host-home')
    const id = 'b'.repeat(64)
    const template = commitTemplate(home, id, {
      name: 'env-only',
      manifest: { base: { kind: 'host' }, hasRootfs: false, env: { BUILT_ON: 'a' } },
    })
    const out = join(work, 'env-only.tar')
    await exportTemplate(template, out, home)
    const elsewhere = join(work, 'host-elsewhere')
    const { template: imported, existed } = await importTemplate(out, elsewhere)
    expect([imported.id, imported.names, imported.env, existed]).toEqual([
      id,
      ['env-only'],
      { BUILT_ON: 'a' },
      false,
    ])
    expect(existsSync(join(imported.dir, 'venv'))).toBe(false)
  })

  it('applies a docker-archive’s layers in order with their whiteouts, never through a link', async () => {
    const lower = join(work, 'lower')
    tree(lower, {
      'etc/keep': 'kept\n',
      'etc/gone': 'removed by a whiteout\n',
      'opt/old/a': 'lower a\n',
      'opt/old/sub/b': 'lower b\n',
      'usr/link': '-> ../etc',
    })
    const upper = join(work, 'upper')
    tree(upper, {
      'etc/.wh.gone': '',
      'opt/old/.wh..wh..opq': '',
      'opt/old/new': 'upper\n',
      // A whiteout through a link would remove etc/keep: it is not followed.
      'usr/link/.wh.keep': '',
      'etc/changed': 'upper\n',
    })
    // usr/link is a link in the lower layer but a folder in upper's tar: replaced, not written through.
    const archive = await dockerArchive('layered', [lower, upper], true)
    const root = join(work, 'from-docker')
    await archiveRoot(archive, root, context)
    expect(readFileSync(join(root, 'etc/keep'), 'utf8')).toBe('kept\n')
    expect(existsSync(join(root, 'etc/gone'))).toBe(false)
    expect(existsSync(join(root, 'etc/.wh.gone'))).toBe(false)
    expect(existsSync(join(root, 'opt/old/a'))).toBe(false)
    expect(existsSync(join(root, 'opt/old/sub'))).toBe(false)
    expect(readFileSync(join(root, 'opt/old/new'), 'utf8')).toBe('upper\n')
    expect(existsSync(join(root, 'opt/old/.wh..wh..opq'))).toBe(false)
    expect(readFileSync(join(root, 'etc/changed'), 'utf8')).toBe('upper\n')
    expect(logs).toContain('Unpacking layer 2/2 (l1/layer.tar)')
  })

  it('refuses a path that leaves the root, and makes no device node', async () => {
    const escaping = await dockerArchive('escaping', [crafted('../escaped', 'File')])
    await expect(archiveRoot(escaping, join(work, 'escape', 'root'), context)).rejects.toThrow(
      /has a path that leaves the root: \.\.\/escaped/,
    )
    expect(existsSync(join(work, 'escape', 'escaped'))).toBe(false)

    const device = await dockerArchive('device', [crafted('dev/null', 'CharacterDevice')])
    const root = join(work, 'device-root')
    await archiveRoot(device, root, context)
    expect(() => lstatSync(join(root, 'dev/null'))).toThrow()
    expect(logs.at(-1)).toMatch(/Not made .*dev\/null/)

    writeFileSync(join(work, 'plain.tar.json'), '{}')
    const notImage = join(work, 'not-image.tar')
    await create({ file: notImage, cwd: work }, ['plain.tar.json'])
    await expect(archiveRoot(notImage, join(work, 'none'), context)).rejects.toMatchObject({
      message: expect.stringMatching(/not an image archive.*manifest\.json is missing/),
      hint: expect.stringMatching(/podman save, docker save or analyst template export/),
    })
  })

  it('refuses an image in podman storage when podman is missing, pointing to archive:', () => {
    const path = process.env.PATH
    process.env.PATH = join(work, 'no-podman-here')
    try {
      expect(() => refuseRegistryImage('team/base:1')).toThrow(
        expect.objectContaining({
          message: expect.stringMatching(
            /team\/base:1 is not in local podman storage \(podman is not installed here\)/,
          ),
          hint: expect.stringMatching(
            /podman save or docker save.*base: archive:PATH, which needs no podman/,
          ),
        }),
      )
    } finally {
      process.env.PATH = path
    }
  })
})
