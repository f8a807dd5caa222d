/**
 * deploy/compose.yaml as a user runs it, for the compose tests: a copy of deploy/ with a .env,
 * podman-compose up under deploy/containers.conf, the images npm run image built from Debian's
 * packages. The fake model listens on the compose network's gateway, where the replicas reach it.
 * @module
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort } from '../../src/test/support/ports.js'
import { type FakeOpenAI, type ScriptEntry, startFakeOpenAI } from '../support/fake-openai.js'
import { waitFor } from '../support/wait.js'
import { IMAGE, must, POSTGRES_IMAGE, PROJECT, PROXY_IMAGE, podman } from './podman.js'

export const TOKEN = 'compose-test-token'

export interface Stack {
  /** The proxy, as clients reach it. */
  url: string
  /** What the fake model answers, in order. */
  script: ScriptEntry[]
  /** A request from inside a replica's container to that replica alone (127.0.0.1:8787). */
  inReplica(service: string, method: string, path: string, body?: unknown): Promise<string>
  down(): Promise<void>
}

const container = (service: string) => `${PROJECT}_${service}_1`

/** Brings the stack up from compose.yaml and the extra files given, with more .env lines; waits for every replica. */
export async function startStack(options: { files?: string[]; env?: string[] } = {}): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), 'analyst-compose-'))
  cpSync(resolve('deploy'), dir, { recursive: true })
  const env = { ...process.env, CONTAINERS_CONF: resolve('deploy/containers.conf') }
  const files = ['compose.yaml', ...(options.files ?? [])].flatMap((file) => ['-f', file])
  const compose = (args: string[]) =>
    podman(['-p', PROJECT, ...files, ...args], { command: 'podman-compose', cwd: dir, env })
  const script: ScriptEntry[] = []
  let model: FakeOpenAI | undefined
  const down = async () => {
    await model?.close()
    await compose(['down', '-v'])
    // podman-compose 1.0 leaves the network; the next stack makes it again with its own gateway.
    await podman(['network', 'rm', '-f', `${PROJECT}_default`])
    rmSync(dir, { recursive: true, force: true })
  }
  try {
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
        ...(options.env ?? []),
        '',
      ].join('\n'),
    )
    const up = await compose(['up', '-d'])
    if (up.code !== 0) throw new Error(`podman-compose up exited ${up.code}: ${up.stderr}${up.stdout}`)
    // The gateway's address exists once a container is on the network.
    model = await startFakeOpenAI(script, { host: gateway, port: modelPort })
    const url = `http://127.0.0.1:${port}`
    await waitFor(
      async () => {
        try {
          return (await fetch(`${url}/readyz`)).ok
        } catch {
          return false
        }
      },
      { what: "the proxy's /readyz", timeoutMs: 180_000, intervalMs: 500 },
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
        { what: `${service}'s /readyz`, timeoutMs: 180_000, intervalMs: 500 },
      )
    }
    return { url, script, inReplica, down }
  } catch (error) {
    await down()
    throw error
  }
}

async function inReplica(service: string, method: string, path: string, body?: unknown): Promise<string> {
  const code = `fetch('http://127.0.0.1:8787' + process.argv[1], { method: process.argv[2], headers: { authorization: 'Bearer ${TOKEN}', 'content-type': 'application/json' }, body: process.argv[3] || undefined }).then(async (r) => { process.stdout.write(await r.text()); process.exit(r.ok ? 0 : 1) })`
  const result = await podman([
    'exec',
    container(service),
    'node',
    '-e',
    code,
    path,
    method,
    body === undefined ? '' : JSON.stringify(body),
  ])
  if (result.code === 0) return result.stdout
  // The server's own words: an internal error says no more to the client.
  const log = await podman(['logs', '--tail', '40', container(service)])
  throw new Error(
    `${method} ${path} on ${service} failed: ${result.stderr}${result.stdout}\n${service} logged:\n${log.stdout}${log.stderr}`,
  )
}
