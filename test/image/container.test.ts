/**
 * The image as users run it: podman with exactly the README's flags (runc, the two ulimits,
 * --cap-drop ALL, --read-only, --security-opt unmask=/proc/*, podman's default seccomp profile),
 * jails inside the container, a question through a fake model kept across a restart on the
 * volume, and two containers over one PostgreSQL.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionDetail } from '../../src/server/types.js'
import { freePort } from '../../src/test/support/ports.js'
import { type PostgresCluster, startPostgres } from '../../src/test/support/postgres.js'
import {
  type FakeOpenAI,
  lastObservation,
  type ScriptEntry,
  startFakeOpenAI,
} from '../support/fake-openai.js'
import { askOverSse, type SseEvent } from '../support/sse.js'
import { healthy, IMAGE, LABEL, must, podman, readmeRunFlags, startContainer, volume } from './podman.js'

const script: ScriptEntry[] = []
let model: FakeOpenAI
let cells: string

function answer(events: SseEvent[]): string | undefined {
  const done = events.find((e) => e.event === 'done')
  if (!done) throw new Error(`No answer; the run sent: ${JSON.stringify(events).slice(0, 2000)}`)
  return (done.data.result as { answer?: string } | undefined)?.answer
}

/** `analyst serve` in a container on the host's network, at a port of its own on 127.0.0.1. */
async function serve(options: { volume?: string; env?: Record<string, string>; args?: string[] } = {}) {
  const port = await freePort()
  const env = {
    PORT: String(port), // the image's HEALTHCHECK asks this port
    ANALYST_MODEL: 'openai-compatible:fake',
    ANALYST_BASE_URL: model.url,
    ANALYST_POOL_SIZE: '0',
    ...options.env,
  }
  const id = await startContainer(
    [
      '--network',
      'host',
      ...(options.volume ? ['-v', `${options.volume}:/data`] : []),
      ...Object.entries(env).flatMap(([name, value]) => ['-e', `${name}=${value}`]),
    ],
    IMAGE,
    ['serve', '--host', '127.0.0.1', '--port', String(port), ...(options.args ?? [])],
  )
  const url = `http://127.0.0.1:${port}`
  await healthy(url, id)
  return { id, url }
}

/** `analyst <args>` in a container of its own, removed after; the cells folder at /cells. */
function analyst(args: string[], flags = readmeRunFlags()) {
  return podman(['run', '--rm', '--label', LABEL, ...flags, '-v', `${cells}:/cells:ro`, IMAGE, ...args])
}

beforeAll(async () => {
  model = await startFakeOpenAI(script)
  cells = mkdtempSync(join(tmpdir(), 'analyst-image-cells-'))
  chmodSync(cells, 0o755) // the container's user, uid 1000, reads the cells
})

afterAll(async () => {
  await model?.close()
  rmSync(cells, { recursive: true, force: true })
})

describe('the image under the README flags', () => {
  it('runs as a non-root user with no capabilities, answers /healthz and passes its HEALTHCHECK', async () => {
    const { id, url } = await serve({ volume: await volume() })
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ ok: true })
    expect((await must(['exec', id, 'id', '-u'])).trim()).toBe('1000')
    // Every process of the container, the server included: no capability in any set.
    const status = await must([
      'exec',
      id,
      'sh',
      '-c',
      'grep -h "^Cap\\(Eff\\|Prm\\|Bnd\\)" /proc/[0-9]*/status | sort -u',
    ])
    expect(
      new Set(
        status
          .trim()
          .split('\n')
          .map((line) => line.split(/\s+/)[1]),
      ),
    ).toEqual(new Set(['0000000000000000']))
    expect((await must(['inspect', '--format', '{{.HostConfig.ReadonlyRootfs}}', id])).trim()).toBe('true')
    expect((await podman(['healthcheck', 'run', id])).code).toBe(0)
  })

  it('runs a pandas cell in a jail inside the container (analyst run), which sees neither the server nor /data', async () => {
    writeFileSync(
      join(cells, 'pandas.py'),
      [
        'import os, pandas as pd',
        "df = pd.DataFrame({'city': ['Oslo', 'Lima', 'Oslo'], 'sales': [3, 4, 5]})",
        "print(df.groupby('city').sales.sum().to_dict())",
        "print(os.getuid(), os.path.exists('/opt/analyst-server'), os.path.exists('/data'), os.getcwd())",
      ].join('\n'),
    )
    const result = await analyst(['run', '--json', '/cells/pandas.py'])
    expect(result.code, result.stderr).toBe(0)
    const cell = JSON.parse(result.stdout.trim().split('\n').at(-1) as string)
    expect(cell.error).toBeUndefined()
    expect(cell.logs.stdout.join('')).toBe("{'Lima': 4, 'Oslo': 8}\n1000 False False /home/user\n")
  })

  it('contains a hostile cell: /etc/shadow, the network, a fork bomb', async () => {
    // Something the container (on the host's network) could reach, and the jail must not.
    let connections = 0
    const listener: Server = createServer((socket) => {
      connections++
      socket.destroy()
    })
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
    const port = (listener.address() as { port: number }).port
    try {
      writeFileSync(
        join(cells, 'hostile.py'),
        `import errno, json, os, socket, time
out = {}
try:
    out['shadow'] = open('/etc/shadow').read()[:20]
except OSError as error:
    out['shadow'] = type(error).__name__
for name, address in (('host', ('127.0.0.1', ${port})), ('internet', ('1.1.1.1', 53))):
    try:
        socket.create_connection(address, timeout=5).close()
        out[name] = 'connected'
    except OSError as error:
        out[name] = type(error).__name__
children, refused, deadline = 0, None, time.time() + 60
while time.time() < deadline:
    try:
        pid = os.fork()
    except OSError as error:
        refused = errno.errorcode.get(error.errno)
        break
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    children += 1
out['fork'] = [children, refused]
print(json.dumps(out))
`,
      )
      writeFileSync(join(cells, 'after.py'), "print('still here')\n")
      const result = await analyst(['run', '--json', '/cells/hostile.py', '/cells/after.py'])
      expect(result.code, result.stderr).toBe(0)
      const [hostile, after] = result.stdout
        .trim()
        .split('\n')
        .slice(-2)
        .map((line) => JSON.parse(line))
      const out = JSON.parse(hostile.logs.stdout.join(''))
      expect(out.shadow).toBe('FileNotFoundError') // the jail has no /etc/shadow at all
      expect(out.host).not.toBe('connected')
      expect(out.internet).not.toBe('connected')
      expect(out.fork[1]).toBe('EAGAIN') // the sandbox's process limit, far below the container's
      expect(out.fork[0]).toBeLessThan(32768)
      expect(after.logs.stdout.join('')).toBe('still here\n')
      expect(connections).toBe(0)
    } finally {
      await new Promise((resolve) => listener.close(resolve))
    }
  })

  it('says in doctor which flag is missing: without unmask=/proc/*, bubblewrap cannot mount /proc', async () => {
    const flags = readmeRunFlags()
    const at = flags.indexOf('unmask=/proc/*')
    expect(at).toBeGreaterThan(0)
    const without = [...flags.slice(0, at - 1), ...flags.slice(at + 1)]
    const missing = await analyst(['doctor'], without)
    expect(missing.code).toBe(1)
    expect(missing.stdout).toContain(
      'bubblewrap cannot mount /proc: run the container with --security-opt unmask=/proc/*',
    )
    expect(missing.stdout).not.toContain('unprivileged_userns_clone')
    const complete = await analyst(['doctor', '--json'])
    expect(complete.code, complete.stdout).toBe(0)
    const checks = JSON.parse(complete.stdout).checks as Array<{ name: string; ok: boolean; detail: string }>
    expect(checks.find((check) => check.name === 'sandbox')?.ok).toBe(true)
    // Podman's default seccomp profile refuses sethostname under --cap-drop ALL: said, not fatal.
    expect(checks.find((check) => check.name === 'jail hostname')?.detail).toMatch(/^refused here/)
  })
})

describe('sessions on the volume and in PostgreSQL', () => {
  it('keeps a question answered through the model across a new container on the same volume', async () => {
    const data = await volume()
    const first = await serve({ volume: data })
    const id = (
      (await (await fetch(`${first.url}/api/sessions`, { method: 'POST', body: '{}' })).json()) as {
        id: string
      }
    ).id
    script.push({ code: 'import pandas as pd\nprint(pd.Series([1, 2, 3]).sum())' }, (request) => ({
      content: lastObservation(request).includes('6') ? 'The sum is 6.' : 'No sum.',
    }))
    expect(answer(await askOverSse(first.url, id, 'What is 1 + 2 + 3?'))).toBe('The sum is 6.')
    await must(['rm', '-f', '-t', '10', first.id])
    const second = await serve({ volume: data })
    const detail = (await (await fetch(`${second.url}/api/sessions/${id}`)).json()) as SessionDetail
    expect(detail.runs.map((run) => [run.question, run.answer])).toEqual([
      ['What is 1 + 2 + 3?', 'The sum is 6.'],
    ])
  })

  describe('two containers over one PostgreSQL', () => {
    let cluster: PostgresCluster
    beforeAll(async () => {
      cluster = await startPostgres()
    })
    afterAll(async () => {
      await cluster?.stop()
    })

    it('see the same session: made on one, asked and read on the other', async () => {
      const databaseUrl = await cluster.createDatabase()
      const [a, b] = await Promise.all([
        serve({ args: ['--database-url', databaseUrl] }),
        serve({ args: ['--database-url', databaseUrl] }),
      ])
      const id = (
        (await (await fetch(`${a.url}/api/sessions`, { method: 'POST', body: '{}' })).json()) as {
          id: string
        }
      ).id
      script.push({ code: 'x = 40 + 2\nprint(x)' }, { content: 'x is 42.' })
      expect(answer(await askOverSse(b.url, id, 'Set x.'))).toBe('x is 42.')
      const seen = (await (await fetch(`${a.url}/api/sessions/${id}`)).json()) as SessionDetail
      expect(seen.runs.map((run) => run.answer)).toEqual(['x is 42.'])
      // A's kernel rebuilds B's state from the store: x is there.
      script.push({ code: 'print(x + 1)' }, (request) => ({
        content: lastObservation(request).includes('43') ? 'Got 43.' : 'Got nothing.',
      }))
      expect(answer(await askOverSse(a.url, id, 'x + 1?'))).toBe('Got 43.')
    })
  })
})
