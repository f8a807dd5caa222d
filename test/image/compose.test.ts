/**
 * deploy/compose.yaml as a user runs it: a copy of deploy/ with a .env, podman-compose up under
 * deploy/containers.conf, the images npm run image built from Debian's packages. Two replicas over
 * PostgreSQL behind HAProxy answer one session: made on one, asked on the other, read through the
 * proxy. The fake model listens on the compose network's gateway, where the replicas reach it.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionDetail } from '../../src/server/types.js'
import { freePort } from '../../src/test/support/ports.js'
import { type FakeOpenAI, type ScriptEntry, startFakeOpenAI } from '../support/fake-openai.js'
import { waitFor } from '../support/wait.js'
import { IMAGE, must, POSTGRES_IMAGE, PROJECT, PROXY_IMAGE, podman } from './podman.js'

const TOKEN = 'compose-test-token'
const script: ScriptEntry[] = []
let model: FakeOpenAI | undefined
let dir: string
let url: string
const env = { ...process.env, CONTAINERS_CONF: resolve('deploy/containers.conf') }

const compose = (args: string[]) =>
  must(['-p', PROJECT, ...args], { command: 'podman-compose', cwd: dir, env })
const container = (service: string) => `${PROJECT}_${service}_1`

/** A request from inside a replica's container to that replica alone (127.0.0.1:8787). */
async function inReplica(service: string, method: string, path: string, body?: unknown): Promise<string> {
  const code = `fetch('http://127.0.0.1:8787' + process.argv[1], { method: process.argv[2], headers: { authorization: 'Bearer ${TOKEN}', 'content-type': 'application/json' }, body: process.argv[3] || undefined }).then(async (r) => { process.stdout.write(await r.text()); process.exit(r.ok ? 0 : 1) })`
  return must([
    'exec',
    container(service),
    'node',
    '-e',
    code,
    path,
    method,
    body === undefined ? '' : JSON.stringify(body),
  ])
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-compose-'))
  cpSync(resolve('deploy'), dir, { recursive: true })
  // The network podman-compose would make, made first with a known gateway for the fake model.
  const third = 100 + Math.floor(Math.random() * 150)
  await must([
    'network',
    'create',
    '--label',
    `io.podman.compose.project=${PROJECT}`,
    '--subnet',
    `10.89.${third}.0/24`,
    `${PROJECT}_default`,
  ])
  const gateway = `10.89.${third}.1`
  const modelPort = await freePort()
  const port = await freePort()
  url = `http://127.0.0.1:${port}`
  writeFileSync(
    join(dir, '.env'),
    [
      `ANALYST_TOKEN=${TOKEN}`,
      'POSTGRES_PASSWORD=compose-test-password',
      'ANALYST_MODEL=openai-compatible:fake',
      `ANALYST_BASE_URL=http://${gateway}:${modelPort}/v1`,
      'ANALYST_POOL_SIZE=0',
      `ANALYST_PORT=${port}`,
      `ANALYST_IMAGE=${IMAGE}`,
      `POSTGRES_IMAGE=${POSTGRES_IMAGE}`,
      `PROXY_IMAGE=${PROXY_IMAGE}`,
      '',
    ].join('\n'),
  )
  await compose(['up', '-d'])
  // The gateway's address exists once a container is on the network.
  model = await startFakeOpenAI(script, { host: gateway, port: modelPort })
  await waitFor(
    async () => {
      try {
        return (await fetch(`${url}/readyz`)).ok
      } catch {
        return false
      }
    },
    {
      what: "the proxy's /readyz",
      timeoutMs: 180_000,
      intervalMs: 500,
    },
  )
  for (const service of ['analyst-a', 'analyst-b']) {
    await waitFor(
      async () =>
        (
          await podman([
            'exec',
            container(service),
            'node',
            '-e',
            "fetch('http://127.0.0.1:8787/readyz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))",
          ])
        ).code === 0,
      {
        what: `${service}'s /readyz`,
        timeoutMs: 180_000,
        intervalMs: 500,
      },
    )
  }
})

afterAll(async () => {
  await model?.close()
  if (dir) {
    await podman(['-p', PROJECT, 'down', '-v'], { command: 'podman-compose', cwd: dir, env })
    rmSync(dir, { recursive: true, force: true })
  }
})

describe('deploy/compose.yaml', () => {
  it('serves one session from both replicas over PostgreSQL, behind the proxy', async () => {
    const id = (JSON.parse(await inReplica('analyst-a', 'POST', '/api/sessions', {})) as { id: string }).id
    script.push(
      { code: 'import pandas as pd\nx = pd.Series([20, 22]).sum()\nprint(x)' },
      { content: 'It is 42.' },
    )
    const events = await inReplica('analyst-b', 'POST', `/api/sessions/${id}/ask`, {
      question: 'What is 20 + 22?',
    })
    expect(events).toMatch(/event: done\ndata: .*"answer":"It is 42\."/)
    const seen = JSON.parse(await inReplica('analyst-a', 'GET', `/api/sessions/${id}`)) as SessionDetail
    expect(seen.runs.map((run) => run.answer)).toEqual(['It is 42.'])
    // Through the proxy, with the token, as clients reach it.
    const viaProxy = await fetch(`${url}/api/sessions/${id}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })
    expect(viaProxy.status).toBe(200)
    expect(((await viaProxy.json()) as SessionDetail).runs.map((run) => run.question)).toEqual([
      'What is 20 + 22?',
    ])
    expect((await fetch(`${url}/api/sessions/${id}`)).status).toBe(401)
  })
})
