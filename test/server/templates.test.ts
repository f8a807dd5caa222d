/**
 * /api/templates over HTTP, on a real server with two tokens (two owners): builds refused unless
 * the server allows them; a build's status, log and SSE stream for its owner alone; cancel;
 * the template listed, shown and removed. The builder here writes a template into the real store
 * without building one (test/e2b/template-build.test.ts builds for real).
 */
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider } from '../../src/index.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import type { BuildTemplate } from '../../src/server/template-runs.js'
import type { TemplateBuildView, TemplateView } from '../../src/server/types.js'
import { exportTemplate } from '../../src/templates/oci.js'
import { commitTemplate } from '../../src/test/support/templates.js'
import { readSse } from '../support/sse.js'

const ALICE = 'alice-token-for-templates'
const BOB = 'bob-token-for-templates'
const provider = new LocalProvider({ poolSize: 0 })
const servers: Array<{ server: RunningServer; home: string }> = []

/** A builder that logs two lines and commits a template to the store; `slow` ones wait to be cancelled. */
const fakeBuilder: BuildTemplate = async (recipe, options) => {
  options.onProgress?.({ type: 'step-start', number: 2, steps: 3, title: 'RUN true' })
  options.onLog?.({ step: 2, stream: 'stdout', line: 'Setting up jq (1.7.1)' })
  if ((recipe.base as unknown as string) === 'slow')
    await new Promise((_, reject) =>
      options.signal?.addEventListener('abort', () => reject(options.signal?.reason)),
    )
  const id = createHash('sha256')
    .update(JSON.stringify(recipe.steps) + String(recipe.name))
    .digest('hex')
  const template = commitTemplate(options.home, id, {
    name: options.name as string,
    manifest: { hasRootfs: false, packages: { pandas: '2.2.3' }, sizeBytes: 123_456 },
    fill: (folder) => mkdirSync(join(folder, 'venv', 'bin'), { recursive: true }),
  })
  return { template }
}

async function start(allowTemplateBuilds: boolean) {
  const home = mkdtempSync(join(tmpdir(), 'analyst-templates-'))
  const server = await startServer({
    port: 0,
    home,
    tokens: [ALICE, BOB],
    provider,
    allowTemplateBuilds,
    templateBuilder: {
      build: fakeBuilder,
      parseSpec: (text, context) => ({ ...JSON.parse(text), steps: [], context }),
    },
  })
  servers.push({ server, home })
  return server.url
}

const call = async <T>(url: string, path: string, token: string, init: RequestInit = {}) => {
  const response = await fetch(`${url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers },
  })
  const text = await response.text()
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T }
}

let url: string
beforeAll(async () => {
  url = await start(true)
})
afterAll(async () => {
  for (const { server, home } of servers) {
    await server.close()
    rmSync(home, { recursive: true, force: true })
  }
  await provider.close()
})

describe('/api/templates', () => {
  it('refuses builds with a 403 that names --allow-template-builds when the server does not allow them', async () => {
    const off = await start(false)
    const refused = await call<{ error: { message: string; hint: string } }>(off, '/api/templates', ALICE, {
      method: 'POST',
      body: JSON.stringify({ name: 'x', spec: { base: 'debian:trixie' } }),
    })
    expect(refused.status).toBe(403)
    expect(`${refused.body.error.message} ${refused.body.error.hint}`).toMatch(
      /off.*--allow-template-builds/s,
    )
    expect((await call<TemplateView[]>(off, '/api/templates', ALICE)).body).toEqual([])
  })

  it("builds: the build's status and log for its owner only, its events as SSE, then the template listed, shown and removed", async () => {
    const started = await call<TemplateBuildView>(url, '/api/templates', ALICE, {
      method: 'POST',
      body: JSON.stringify({ name: 'jq', spec: { base: 'debian:trixie', apt: ['jq'] } }),
    })
    expect(started.status).toBe(202)
    const { id } = started.body
    expect((await call(url, `/api/templates/builds/${id}`, BOB)).status).toBe(404)

    const events = await fetch(`${url}/api/templates/builds/${id}/events`, {
      headers: { authorization: `Bearer ${ALICE}` },
    })
    const seen: Array<{ type?: string; line?: { message: string }; build?: TemplateBuildView }> = []
    for await (const event of readSse(events)) seen.push(event.data)
    expect(seen.map((event) => event.line?.message).filter(Boolean)).toContain('Setting up jq (1.7.1)')
    const end = seen.at(-1)
    expect(end?.type).toBe('end')
    expect(end?.build).toMatchObject({ status: 'ready', template: { name: 'jq', base: 'debian:trixie' } })

    const status = await call<TemplateBuildView & { log: Array<{ message: string; step?: number }> }>(
      url,
      `/api/templates/builds/${id}?logsOffset=1`,
      ALICE,
    )
    expect(status.body.status).toBe('ready')
    expect(status.body.log).toContainEqual(
      expect.objectContaining({ message: 'Setting up jq (1.7.1)', step: 2 }),
    )

    const list = await call<TemplateView[]>(url, '/api/templates', BOB)
    expect(list.body).toEqual([
      expect.objectContaining({
        name: 'jq',
        base: 'debian:trixie',
        python: '3.13.5',
        packages: { pandas: '2.2.3' },
      }),
    ])
    expect(JSON.stringify(list.body)).not.toContain(servers[0]?.home ?? '/tmp')
    expect((await call<TemplateView>(url, '/api/templates/jq', BOB)).body.sizeBytes).toBe(123_456)
    expect((await call(url, '/api/templates/jq', ALICE, { method: 'DELETE' })).status).toBe(204)
    expect((await call(url, '/api/templates/jq', ALICE)).status).toBe(404)
  })

  it('cancels a build: its owner only, and the build ends cancelled', async () => {
    const started = await call<TemplateBuildView>(url, '/api/templates', ALICE, {
      method: 'POST',
      body: JSON.stringify({ name: 'slow', spec: { base: 'slow' } }),
    })
    const { id } = started.body
    expect((await call(url, `/api/templates/builds/${id}`, BOB, { method: 'DELETE' })).status).toBe(404)
    expect((await call(url, `/api/templates/builds/${id}`, ALICE, { method: 'DELETE' })).status).toBe(204)
    await expect
      .poll(
        async () => (await call<TemplateBuildView>(url, `/api/templates/builds/${id}`, ALICE)).body.status,
        {
          timeout: 10_000,
        },
      )
      .toBe('cancelled')
    expect((await call<TemplateView[]>(url, '/api/templates', ALICE)).body.map((t) => t.name)).not.toContain(
      'slow',
    )
  })

  it('imports the template archives of ANALYST_TEMPLATE_IMPORT when it starts (how the image brings its own)', async () => {
    const source = mkdtempSync(join(tmpdir(), 'analyst-templates-source-'))
    const archives = mkdtempSync(join(tmpdir(), 'analyst-templates-archives-'))
    try {
      const { template } = await fakeBuilder(
        { base: { kind: 'host' }, steps: [], context: source },
        { home: source, name: 'carried' },
      )
      await exportTemplate(template, join(archives, 'carried.tar'), source)
      process.env.ANALYST_TEMPLATE_IMPORT = archives
      const carrier = await start(false)
      expect((await call<TemplateView[]>(carrier, '/api/templates', ALICE)).body).toEqual([
        expect.objectContaining({ name: 'carried', id: template.id }),
      ])
    } finally {
      delete process.env.ANALYST_TEMPLATE_IMPORT
      rmSync(source, { recursive: true, force: true })
      rmSync(archives, { recursive: true, force: true })
    }
  })

  it('refuses a spec that names files on the server', async () => {
    for (const spec of [
      { base: 'debian:trixie', files: [{ src: '/etc/shadow', dest: '/x' }] },
      { base: 'debian:trixie', pip: { requirements: '/etc/passwd' } },
      { base: 'debian:trixie', pip: { 'find-links': ['/root'] } },
      { base: 'archive:/var/lib/image.tar' },
    ]) {
      const refused = await call<{ error: { message: string } }>(url, '/api/templates', ALICE, {
        method: 'POST',
        body: JSON.stringify({ name: 'files', spec }),
      })
      expect(refused.status, JSON.stringify(spec)).toBe(400)
      expect(refused.body.error.message).toMatch(/would name files on the server/)
    }
  })
})
