import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { freePort as closedPort } from '../../test/support/ports.js'
import { commitTemplate } from '../../test/support/templates.js'
import { UsageError } from '../errors.js'
import { templateBuild, templateList, templateRemove, templateShow } from './template.js'

function output() {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', (chunk: Buffer) => {
    text += chunk.toString()
  })
  return { stream, text: () => text }
}

describe('analyst template list, show, rm', () => {
  let home: string
  const id = 'a'.repeat(64)
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'analyst-template-cli-'))
    commitTemplate(home, id, {
      name: 'modern',
      manifest: {
        languages: ['python', 'bash'],
        packages: { pandas: '2.2.3', numpy: '2.2.4' },
        env: { TZ: 'UTC' },
        sizeBytes: 1.5 * 1024 ** 3,
        createdAt: '2026-12-04T19:00:00.000Z',
      },
    })
  })
  afterEach(() => rmSync(home, { recursive: true, force: true }))
  const env = () => ({ ANALYST_HOME: home })

  it('lists templates as a table and as JSON', async () => {
    const table = output()
    await templateList({ json: false, env: env(), stdout: table.stream, cwd: home })
    expect(table.text().split('\n')[1]).toMatch(
      /^modern\s+aaaaaaaaaaaa\s+debian:trixie\s+Python 3\.13\.5\s+1\.5 GiB\s+2026-12-04 19:00$/,
    )
    const json = output()
    await templateList({ json: true, env: env(), stdout: json.stream, cwd: home })
    expect(JSON.parse(json.text())).toMatchObject([{ id, names: ['modern'], packages: { pandas: '2.2.3' } }])
  })

  it('shows one with its packages, and removes it by name', async () => {
    const shown = output()
    await templateShow({ name: 'modern', json: false, env: env(), stdout: shown.stream, cwd: home })
    expect(shown.text()).toMatch(/python {5}3\.13\.5 \(\/usr\/bin\/python3\)/)
    expect(shown.text()).toMatch(/pandas\s+2\.2\.3\n\s+numpy\s+2\.2\.4/)
    const removed = output()
    await templateRemove({ names: ['modern'], env: env(), stdout: removed.stream, cwd: home })
    expect(removed.text()).toBe('Removed modern (aaaaaaaaaaaa)\n')
    await expect(templateShow({ name: 'modern', json: false, env: env(), cwd: home })).rejects.toThrow(
      /No template "modern"/,
    )
  })

  it("removes it here and says so when the replicas' database does not answer", async () => {
    const removed = output()
    const warned = output()
    const code = await templateRemove({
      names: ['modern'],
      // A port nothing listens on: the database is down.
      env: { ...env(), ANALYST_DATABASE_URL: `postgres://nobody@127.0.0.1:${await closedPort()}/analyst` },
      stdout: removed.stream,
      stderr: warned.stream,
      cwd: home,
    })
    expect(code).toBe(1)
    expect(removed.text()).toBe('Removed modern (aaaaaaaaaaaa)\n')
    expect(warned.text()).toMatch(
      /modern removed here but not from the replicas' database: .+ DELETE \/api\/templates\/NAME/,
    )
    expect(warned.text()).not.toMatch(/\n\s+at /)
    await expect(templateShow({ name: 'modern', json: false, env: env(), cwd: home })).rejects.toThrow(
      /No template "modern"/,
    )
  })

  it('says which recipes there are for a spec that is neither a file nor a recipe', async () => {
    const error = await templateBuild({
      spec: 'nosuch',
      force: false,
      quiet: true,
      env: env(),
      cwd: home,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UsageError)
    expect((error as UsageError).hint).toMatch(/recipes: modern, r/)
  })
})
