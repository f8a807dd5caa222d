/**
 * `analyst serve` with its own provider (no test-supplied one): the warm pool it starts is the one
 * its sessions use, and closing the server leaves no kernel (no process of ours) behind.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { LocalProvider } from '../../src/index.js'
import { ScriptedModel } from '../../src/models/scripted.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { descendants } from '../support/processes.js'
import { askOverSse } from '../support/sse.js'
import { waitFor } from '../support/wait.js'

let server: RunningServer | undefined
let home: string | undefined
afterEach(async () => {
  await server?.close()
  if (home) rmSync(home, { recursive: true, force: true })
})

describe('analyst serve and its sandboxes', () => {
  it('answers the first question from a warm kernel, and leaves no process behind when closed', async () => {
    home = mkdtempSync(join(tmpdir(), 'analyst-pool-'))
    const model = new ScriptedModel([{ code: 'print(6 * 7)' }, { text: 'It is 42.' }])
    server = await startServer({
      port: 0,
      home,
      tokens: [],
      model: async () => ({
        model,
        spec: 'scripted:pool',
        provider: 'custom',
        modelId: 'pool',
        mode: 'tools',
      }),
    })
    const provider = server.provider
    expect(provider).toBeInstanceOf(LocalProvider)
    const pool = () => (provider as LocalProvider).poolStats
    await waitFor(() => pool().size > 0 && pool().ready === pool().size, {
      what: () => `the warm pool to fill (${JSON.stringify(pool())})`,
      timeoutMs: 120_000,
    })
    const { id } = (await (
      await fetch(`${server.url}/api/sessions`, { method: 'POST', body: '{}' })
    ).json()) as {
      id: string
    }
    const form = new FormData()
    form.append('file', new Blob([readFileSync(resolve('examples/sales.csv'))]), 'sales.csv')
    expect(
      (await fetch(`${server.url}/api/sessions/${id}/files`, { method: 'POST', body: form })).status,
    ).toBe(201)
    const events = await askOverSse(server.url, id, 'Six times seven?')
    expect(events.at(-1)).toMatchObject({ event: 'done', data: { result: { answer: 'It is 42.' } } })
    expect(pool()).toMatchObject({ hits: 1, misses: 0 })
    expect(descendants().length).toBeGreaterThan(0) // the session's kernel and the refilled pool

    await server.close()
    server = undefined
    await waitFor(() => descendants().length === 0, {
      what: () => `no process of ours to remain (${JSON.stringify(descendants())})`,
    })
  }, 180_000)
})
