/**
 * Real template builds: a small trixie root (python3 only, cached between runs in TEMPLATE_CACHE,
 * whose root the trixie test template is built on too), built once for the file and reused as the
 * base of the rest; a pip layer from a PEP 503 index on 127.0.0.1 made of a wheel the test builds;
 * the cache; failures that name their step and leave nothing; a Containerfile FROM the local base;
 * a registry base refused; export, import, an archive as a base (no podman) and podman load.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidArgumentError, TemplateBuildError } from '../../src/errors.js'
import { type BuildOptions, type BuildProgress, buildTemplate } from '../../src/templates/build.js'
import { parseContainerfile } from '../../src/templates/containerfile.js'
import { lowerE2BBuild } from '../../src/templates/e2b.js'
import { exportTemplate, importTemplate } from '../../src/templates/oci.js'
import { parseSpec } from '../../src/templates/spec.js'
import { openTemplates } from '../../src/templates/store.js'
import type { BuiltTemplate } from '../../src/templates/types.js'
import { readmeRunFlags } from '../image/podman.js'
import { TEMPLATE_CACHE } from '../support/templates.js'
import { e2bBuildBody } from './e2b-body.js'
import { buildWheel, type PackageIndex, servePackageIndex } from './index-server.js'

const root = process.geteuid?.() === 0
/** A build on a loaded 2-core machine: seconds alone, a minute or more beside other work. */
const BUILD_MS = 240_000

describe.runIf(root)('template builds', () => {
  let home: string
  let index: PackageIndex
  let base: BuiltTemplate
  const options = (extra: Partial<BuildOptions> = {}): BuildOptions => ({
    home,
    cacheDir: TEMPLATE_CACHE,
    // Not the machine's PIP_* settings: the test's index only.
    env: { OPENAI_API_KEY: 'sk-host-secret', ANALYST_TOKEN: 'host-token' },
    ...extra,
  })
  /** What is in the store's folder besides templates, their names and the cache: a half build. */
  const leftovers = () =>
    readdirSync(join(home, 'templates')).filter((entry) => !/^[0-9a-f]{64}$/.test(entry) && entry !== 'names')

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'analyst-template-build-'))
    index = await servePackageIndex(buildWheel(home, 'tinypkg', '0.1.0'))
    writeFileSync(join(home, 'hello.txt'), 'hello\n')
    base = (await buildTemplate(parseSpec('name: base\nbase: debian:trixie-slim\n', home), options()))
      .template
  }, 600_000)
  afterAll(async () => {
    await index?.close()
    if (home) rmSync(home, { recursive: true, force: true })
  }, 300_000)

  it(
    'makes a trixie root with the kernel’s Python and a user, under its name',
    () => {
      expect(base).toMatchObject({ names: ['base'], base: { kind: 'debian', suite: 'trixie' } })
      expect(base.python).toEqual({ path: '/usr/bin/python3', version: expect.stringMatching(/^3\.13\./) })
      for (const path of ['usr/bin/python3', 'usr/lib/python3/dist-packages/pip', 'etc/passwd'])
        expect(existsSync(join(base.rootfs as string, path))).toBe(true)
      expect(readFileSync(join(base.rootfs as string, 'etc/passwd'), 'utf8')).toMatch(/^user:x:1000:1000:/m)
    },
    BUILD_MS,
  )

  it(
    'puts a plain pip install in the venv from the index on 127.0.0.1; the same spec again is the same template, from the cache; --force builds it again',
    async () => {
      const spec = [
        'base: template:base',
        'pip:',
        '  packages: [tinypkg==0.1.0]',
        `  index-url: ${index.url}`,
        'files: [{ src: hello.txt, dest: /opt/data/ }]',
        'env: { GREETING: hi }',
        `run: ["python -c 'import tinypkg; print(tinypkg.VERSION)' > /opt/data/version.txt"]`,
        'workdir: /home/user',
        'start: import tinypkg',
      ].join('\n')
      const events: BuildProgress[] = []
      const first = await buildTemplate(
        parseSpec(spec, home),
        options({ name: 'pip', onProgress: (e) => events.push(e) }),
      )
      const template = first.template
      expect(first.cached).toBe(false)
      expect(template.python.path).toBe('/opt/venv/bin/python')
      expect(template.env).toMatchObject({ GREETING: 'hi', VIRTUAL_ENV: '/opt/venv' })
      expect(template.env.PATH?.split(':')[0]).toBe('/opt/venv/bin')
      expect(template).toMatchObject({ workdir: '/home/user', start: 'import tinypkg', names: ['pip'] })
      const rootfs = template.rootfs as string
      expect(readFileSync(join(rootfs, 'opt/data/version.txt'), 'utf8')).toBe('0.1.0\n')
      expect(readFileSync(join(rootfs, 'opt/data/hello.txt'), 'utf8')).toBe('hello\n')
      expect(readFileSync(join(rootfs, 'opt/venv/pyvenv.cfg'), 'utf8')).toMatch(
        /include-system-site-packages = true/,
      )
      expect(
        events.filter((e) => e.type === 'step-start').map((e) => e.type === 'step-start' && e.title),
      ).toEqual([
        'FROM template:base',
        'ENV GREETING',
        'RUN pip install tinypkg==0.1.0',
        'COPY hello.txt /opt/data/',
        "RUN python -c 'import tinypkg; print(tinypkg.VERSION)' > /opt/data/version.txt",
        'WORKDIR /home/user',
        'finish: versions and size',
      ])

      const again: BuildProgress[] = []
      const second = await buildTemplate(parseSpec(spec, home), options({ onProgress: (e) => again.push(e) }))
      expect(second).toMatchObject({ cached: true, template: { id: template.id, names: ['pip'] } })
      expect(again.map((e) => e.type)).toEqual(['build-start', 'finish'])

      const forced = await buildTemplate(parseSpec(spec, home), options({ force: true }))
      expect(forced.cached).toBe(false)
      expect(forced.template.id).toBe(template.id)
      expect(forced.template.createdAt > template.createdAt).toBe(true)
      expect(leftovers()).toEqual([])
    },
    BUILD_MS,
  )

  it(
    'over the host’s Python, puts the pip layer in <id>/venv, mounted at /opt/venv',
    async () => {
      const spec = `base: host\npip:\n  packages: [tinypkg==0.1.0]\n  index-url: ${index.url}\n`
      const { template } = await buildTemplate(parseSpec(spec, home), options({ name: 'host-pip' }))
      expect(template.rootfs).toBeUndefined()
      expect(template.base).toEqual({ kind: 'host' })
      expect(template.python.path).toBe('/opt/venv/bin/python')
      const venv = join(template.dir, 'venv')
      expect(readFileSync(join(venv, 'pyvenv.cfg'), 'utf8')).toMatch(/include-system-site-packages = true/)
      expect(
        readdirSync(join(venv, 'lib')).flatMap((python) =>
          readdirSync(join(venv, 'lib', python, 'site-packages')),
        ),
      ).toContain('tinypkg')
    },
    BUILD_MS,
  )

  it(
    'names the failed pip step and the index, and leaves no half template',
    async () => {
      // Over the host: the same pip step, without copying a root first.
      const spec = `base: host\npip:\n  packages: [polars==9.9]\n  index-url: ${index.url}\n`
      const error = await buildTemplate(parseSpec(spec, home), options({ name: 'nope' })).catch(
        (e: unknown) => e,
      )
      expect(TemplateBuildError.isInstance(error)).toBe(true)
      const failed = error as TemplateBuildError
      expect(failed.message).toMatch(
        /^Step 2\/3 \(RUN pip install polars==9\.9\) failed: pip found no polars==9\.9 in http:\/\/127\.0\.0\.1:\d+\/simple/,
      )
      expect(failed.step).toEqual({ number: 2, title: 'RUN pip install polars==9.9' })
      expect(leftovers()).toEqual([])
      expect(
        openTemplates(home)
          .list()
          .flatMap((t) => t.names),
      ).not.toContain('nope')
    },
    BUILD_MS,
  )

  it(
    "names the failed apt step with apt's own words",
    async () => {
      const error = await buildTemplate(
        parseSpec('base: template:base\napt: [python3-nosuch]\n', home),
        options(),
      ).catch((e: unknown) => e)
      expect(TemplateBuildError.isInstance(error)).toBe(true)
      expect((error as Error).message).toMatch(
        /^Step 2\/3 \(RUN apt-get install python3-nosuch\) failed: E: Unable to locate package python3-nosuch$/,
      )
      expect(leftovers()).toEqual([])
    },
    BUILD_MS,
  )

  it(
    'builds a Containerfile FROM the local base: ENV, COPY, WORKDIR, USER; RUN steps see no host secret and no network',
    async () => {
      const containerfile = [
        'FROM base',
        'ARG LEVEL=2',
        'ENV GREETING="hello there"',
        'COPY hello.txt /opt/files/',
        'RUN env > /opt/files/env.txt',
        `RUN python3 -c "import os, socket; print(os.strerror(socket.socket().connect_ex(('127.0.0.1', ${new URL(index.url).port}))))" > /opt/files/network.txt`,
        'USER user',
        'WORKDIR /home/user/work',
        'RUN id -un > whoami && pwd >> whoami',
      ].join('\n')
      const { template } = await buildTemplate(
        parseContainerfile(containerfile, home),
        options({ name: 'tools' }),
      )
      const rootfs = template.rootfs as string
      expect(template.env).toMatchObject({ LEVEL: '2', GREETING: 'hello there' })
      expect(template.workdir).toBe('/home/user/work')
      expect(readFileSync(join(rootfs, 'home/user/work/whoami'), 'utf8')).toBe('user\n/home/user/work\n')
      const env = readFileSync(join(rootfs, 'opt/files/env.txt'), 'utf8')
      expect(env).toMatch(/^GREETING=hello there$/m)
      expect(env).not.toMatch(/sk-host-secret|host-token|ANALYST_/)

      // A RUN that is no package fetch has no network: not even the index on the host's loopback.
      expect(readFileSync(join(rootfs, 'opt/files/network.txt'), 'utf8')).toMatch(/unreachable|refused/i)
    },
    BUILD_MS,
  )

  it(
    "builds what E2B's Template builder sends, lowered to the same steps (COPY from its upload by files hash)",
    async () => {
      // E2B's `base` is its own default template (the host's Python here): another name for ours.
      openTemplates(home).setName('small', base.id)
      const body = await e2bBuildBody(
        (t) =>
          t
            .fromTemplate('small')
            .pipInstall('tinypkg==0.1.0')
            .copy('hello.txt', '/opt/data/')
            .setEnvs({ GREETING: 'hi' })
            .setWorkdir('/home/user')
            .runCmd('python -c "import tinypkg; print(tinypkg.VERSION)" > /opt/data/version.txt'),
        home,
      )
      // The server keeps each upload unpacked under its files hash.
      const uploads = mkdtempSync(join(home, 'uploads-'))
      const hash = body.steps?.find((step) => step.type === 'COPY')?.filesHash as string
      mkdirSync(join(uploads, hash))
      writeFileSync(join(uploads, hash, 'hello.txt'), 'hello\n')
      const recipe = { ...lowerE2BBuild(body, uploads), pip: { indexUrl: index.url } }
      const { template } = await buildTemplate(recipe, options({ name: 'from-e2b' }))
      expect(template.env).toMatchObject({ GREETING: 'hi', VIRTUAL_ENV: '/opt/venv' })
      expect(readFileSync(join(template.rootfs as string, 'opt/data/version.txt'), 'utf8')).toBe('0.1.0\n')
      expect(readFileSync(join(template.rootfs as string, 'opt/data/hello.txt'), 'utf8')).toBe('hello\n')
    },
    BUILD_MS,
  )

  it(
    'refuses a registry base at once, saying which bases work',
    async () => {
      const events: BuildProgress[] = []
      const error = await buildTemplate(
        parseContainerfile('FROM python:3.12\nRUN true\n', home),
        options({ onProgress: (e) => events.push(e) }),
      ).catch((e: unknown) => e)
      expect(InvalidArgumentError.isInstance(error)).toBe(true)
      expect((error as InvalidArgumentError).message).toMatch(/python:3\.12 is not in local podman storage/)
      expect((error as InvalidArgumentError).hint).toMatch(/debian:<suite>/)
      expect(events).toEqual([])
    },
    BUILD_MS,
  )

  it(
    'stops at once when cancelled, leaving nothing',
    async () => {
      const controller = new AbortController()
      const built = buildTemplate(
        parseSpec('base: template:base\nrun: ["sleep 120"]\n', home),
        options({
          signal: controller.signal,
          onProgress: (e) => e.type === 'step-start' && controller.abort(),
        }),
      )
      await expect(built).rejects.toThrow(/cancelled at step 1\/3 \(FROM template:base\)/)
      expect(leftovers()).toEqual([])
    },
    BUILD_MS,
  )

  it(
    'exports an OCI archive that imports as the same template elsewhere, that a build starts from without podman, and that podman loads',
    async () => {
      const out = join(home, 'base.tar')
      await exportTemplate(base, out, home)
      const elsewhere = mkdtempSync(join(tmpdir(), 'analyst-template-import-'))
      try {
        const imported = await importTemplate(out, elsewhere)
        expect(imported.existed).toBe(false)
        expect(imported.template).toMatchObject({
          id: base.id,
          names: ['base'],
          python: base.python,
          base: base.base,
        })
        expect(readFileSync(join(imported.template.rootfs as string, 'etc/passwd'), 'utf8')).toMatch(
          /^user:x:1000/m,
        )
        expect((await importTemplate(out, elsewhere, 'again')).existed).toBe(true)
        // A damaged archive is refused.
        writeFileSync(join(home, 'not.tar'), 'not a tar')
        await expect(importTemplate(join(home, 'not.tar'), elsewhere)).rejects.toThrow()
      } finally {
        rmSync(elsewhere, { recursive: true, force: true })
      }
      // The archive as a base, read without podman: its root, then a step over it.
      const fromArchive = (
        await buildTemplate(
          parseSpec(
            `name: from-archive\nbase: archive:${out}\nrun: ["echo over-archive > /opt/marker"]\n`,
            home,
          ),
          options(),
        )
      ).template
      expect(fromArchive.base).toEqual({ kind: 'oci', image: `archive:${out}` })
      expect(fromArchive.python).toEqual(base.python)
      expect(readFileSync(join(fromArchive.rootfs as string, 'opt/marker'), 'utf8')).toBe('over-archive\n')
      expect(readFileSync(join(fromArchive.rootfs as string, 'etc/passwd'), 'utf8')).toMatch(/^user:x:1000/m)
      if (spawnSync('podman', ['--version']).status !== 0) return
      const loaded = spawnSync('podman', ['load', '--quiet', '--input', out], { encoding: 'utf8' })
      expect(loaded.status, loaded.stderr).toBe(0)
      const image = `localhost/analyst-template-base:${base.id.slice(0, 12)}`
      expect(loaded.stdout).toContain(image)
      // The README's podman flags (runc, the two ulimits this machine needs, no capabilities).
      const flags = [...readmeRunFlags(), '--network=none']
      const run = spawnSync(
        'podman',
        ['run', '--rm', ...flags, image, '/usr/bin/python3', '-c', 'print(6 * 7)'],
        { encoding: 'utf8' },
      )
      spawnSync('podman', ['rmi', '--force', image])
      expect(run.stdout.trim(), run.stderr).toBe('42')
    },
    BUILD_MS,
  )
})
