/**
 * E2B's Template builder, through the SDK unchanged, against `analyst serve --allow-template-builds`:
 * a trixie base with a pip package from a PEP 503 index the test serves on 127.0.0.1, a COPY and
 * an ENV, built for real (the base root from the build cache under .cache/templates), then
 * `Sandbox.create(name)` running code in it. A failing step is named, as E2B's SDK names it.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from '@e2b/code-interpreter'
import { BuildError, Template } from 'e2b'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TEMPLATE_CACHE } from '../support/templates.js'
import { buildWheel, type PackageIndex, servePackageIndex } from '../templates/index-server.js'
import { type E2BServer, startE2BServer } from './server.js'

const canBuild = process.getuid?.() === 0 && existsSync('/usr/bin/mmdebstrap')

describe.skipIf(!canBuild)("E2B's Template.build against analyst serve", () => {
  let e2b: E2BServer
  let index: PackageIndex
  let work: string
  const saved = { cache: process.env.ANALYST_TEMPLATE_CACHE, index: process.env.PIP_INDEX_URL }
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'analyst-e2b-build-'))
    index = await servePackageIndex(buildWheel(work, 'analysthello', '1.0'))
    // The builder reads these where the server runs: the shared base cache, and pip's index.
    process.env.ANALYST_TEMPLATE_CACHE = TEMPLATE_CACHE
    process.env.PIP_INDEX_URL = index.url
    e2b = await startE2BServer({ poolSize: 0, allowTemplateBuilds: true })
  }, 120_000)
  afterAll(async () => {
    await e2b?.close()
    await index?.close()
    process.env.ANALYST_TEMPLATE_CACHE = saved.cache
    process.env.PIP_INDEX_URL = saved.index
    if (saved.cache === undefined) delete process.env.ANALYST_TEMPLATE_CACHE
    if (saved.index === undefined) delete process.env.PIP_INDEX_URL
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('builds a template with a pip package, a COPY and an ENV, and Sandbox.create(name) runs code in it', async () => {
    const context = join(work, 'context')
    mkdirSync(context)
    writeFileSync(join(context, 'greeting.txt'), 'hello from the build context\n')
    const template = Template({ fileContextPath: context })
      .fromImage('debian:trixie-slim')
      .pipInstall('analysthello==1.0')
      .copy('greeting.txt', '/opt/greeting.txt')
      .setEnvs({ GREETING_FILE: '/opt/greeting.txt' })
    const logs: string[] = []
    const built = await Template.build(template, 'e2b-hello', {
      onBuildLogs: (entry) => void logs.push(entry.message),
    })
    expect(built.templateId).toBe('e2b-hello')
    expect(logs.join('\n')).toMatch(/Step \d+\/\d+: RUN pip install analysthello==1.0/)
    expect(await Template.exists('e2b-hello')).toBe(true)

    const sandbox = await Sandbox.create('e2b-hello')
    try {
      const execution = await sandbox.runCode(
        "import analysthello, os, sys\nprint(open(os.environ['GREETING_FILE']).read().strip())\n(analysthello.VERSION, sys.version_info[:2] >= (3, 13))",
      )
      expect(execution.error).toBeUndefined()
      expect(execution.logs.stdout.join('')).toBe('hello from the build context\n')
      expect(execution.text).toBe("('1.0', True)")
    } finally {
      await sandbox.kill()
    }

    // The same template again: from the store, with its COPY's files found present (no upload).
    const again: string[] = []
    await Template.build(template, 'e2b-hello', { onBuildLogs: (entry) => void again.push(entry.message) })
    expect(again.join('\n')).toMatch(/Skipping upload of 'greeting.txt', already cached/)
    expect(again.join('\n')).toMatch(/from the store/)
  }, 300_000)

  it('names the failing step and why, as the SDK reports it', async () => {
    const template = Template().fromImage('debian:trixie-slim').pipInstall('nosuchpackage==9.9')
    const error = await Template.build(template, 'e2b-broken').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BuildError)
    expect((error as Error).message).toMatch(/pip found no nosuchpackage==9\.9 in http:\/\/127\.0\.0\.1/)
    expect(await Template.exists('e2b-broken')).toBe(false)
  }, 120_000)
})
