/**
 * The image as users run it: podman with exactly the README's flags (runc, the two ulimits,
 * --cap-drop ALL, --read-only, --security-opt unmask=/proc/*, podman's default seccomp profile),
 * jails inside the container, R, JavaScript, TypeScript and bash contexts and the template baked
 * in (E2B's SDK), a kernel the OOM killer takes under a small --memory (never tini or the server),
 * a question through a fake model kept across a restart on the volume, and two containers over
 * one PostgreSQL.
 */
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from '@e2b/code-interpreter'
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
import {
  healthy,
  IMAGE,
  LABEL,
  must,
  podman,
  readmeRunFlags,
  startContainer,
  TEMPLATE,
  TEMPLATE_PACKAGE,
  volume,
} from './podman.js'

const script: ScriptEntry[] = []
let model: FakeOpenAI
let cells: string

function answer(events: SseEvent[]): string | undefined {
  const done = events.find((e) => e.event === 'done')
  if (!done) throw new Error(`No answer; the run sent: ${JSON.stringify(events).slice(0, 2000)}`)
  return (done.data.result as { answer?: string } | undefined)?.answer
}

/** `analyst serve` in a container on the host's network, at a port of its own on 127.0.0.1. */
async function serve(
  options: { volume?: string; env?: Record<string, string>; args?: string[]; flags?: string[] } = {},
) {
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
      ...(options.flags ?? []),
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

const TOKEN = 'image-test-token'

/** `analyst serve` in a container, with E2B's SDK pointed at it (its own environment variables). */
async function serveForE2B(flags: string[] = []) {
  const served = await serve({ env: { ANALYST_TOKEN: TOKEN }, flags })
  process.env.E2B_API_URL = served.url
  process.env.E2B_SANDBOX_URL = served.url
  process.env.E2B_API_KEY = TOKEN
  return served
}

describe("other languages and a template, through E2B's SDK", () => {
  beforeAll(async () => {
    await serveForE2B()
  })

  it('runs R (with its packages and ggplot2), JavaScript, TypeScript and bash contexts in the jail', async () => {
    const sandbox = await Sandbox.create()
    try {
      const r = await sandbox.runCode(
        'suppressPackageStartupMessages({library(data.table); library(readr); library(readxl); library(ggplot2)})\nd <- data.table(x = 1:3)\nsum(d$x)',
        { language: 'r' },
      )
      expect(r.error).toBeUndefined()
      expect(r.results[0]?.text).toBe('[1] 6')
      const plot = await sandbox.runCode(
        'ggplot(data.frame(x = 1:3, y = c(2, 1, 3)), aes(x, y)) + geom_line()',
        {
          language: 'r',
        },
      )
      expect(plot.error).toBeUndefined()
      expect(plot.results.some((result) => result.png)).toBe(true)
      const js = await sandbox.runCode('const v = process.versions.node; await Promise.resolve(v)', {
        language: 'js',
      })
      expect(js.error).toBeUndefined()
      expect(js.text).toMatch(/^20\./)
      const ts = await sandbox.runCode('const n: number = 6; n * 7', { language: 'ts' })
      expect(ts.text).toBe('42')
      const bash = await sandbox.runCode('echo "$((6 * 7)) $(pwd)"', { language: 'bash' })
      expect(bash.logs.stdout).toEqual(['42 /home/user\n'])
    } finally {
      await sandbox.kill()
    }
  })

  it('starts a sandbox from the template baked into the image (npm run image -- --with-template)', async () => {
    const sandbox = await Sandbox.create(TEMPLATE)
    try {
      const execution = await sandbox.runCode(
        `import ${TEMPLATE_PACKAGE.name}, sys, pandas\nprint(${TEMPLATE_PACKAGE.name}.VERSION, sys.prefix)`,
      )
      expect(execution.error).toBeUndefined()
      expect(execution.logs.stdout.join('')).toBe(`${TEMPLATE_PACKAGE.version} /opt/venv\n`)
    } finally {
      await sandbox.kill()
    }
    // The sandbox with no template has no such package.
    const plain = await Sandbox.create()
    try {
      const execution = await plain.runCode(`import ${TEMPLATE_PACKAGE.name}`)
      expect(execution.error?.name).toBe('ModuleNotFoundError')
    } finally {
      await plain.kill()
    }
  })

  it('runs R files with analyst run --language r', async () => {
    writeFileSync(
      join(cells, 'sales.R'),
      'df <- data.frame(city = c("Oslo", "Lima", "Oslo"), sales = c(3, 4, 5))\nprint(tapply(df$sales, df$city, sum))\n',
    )
    const result = await analyst(['run', '--language', 'r', '--json', '/cells/sales.R'])
    expect(result.code, result.stderr).toBe(0)
    const cell = JSON.parse(result.stdout.trim().split('\n').at(-1) as string)
    expect(cell.error).toBeUndefined()
    expect(cell.logs.stdout.join('')).toMatch(/Lima\s+Oslo\s*\n\s*4\s+8/)
  })
})

/** Each process of the container: its pid, its oom_score_adj and its command line. */
async function oomScores(container: string): Promise<Array<{ pid: number; adj: number; command: string }>> {
  const listing = await must([
    'exec',
    container,
    'sh',
    '-c',
    'for p in /proc/[0-9]*; do a=$(cat $p/oom_score_adj 2>/dev/null) && printf "%s %s %s\\n" "$(basename $p)" "$a" "$(tr "\\0" " " < $p/cmdline 2>/dev/null)"; done',
  ])
  return listing
    .trim()
    .split('\n')
    .map((line) => {
      const [pid, adj, ...command] = line.split(' ')
      return { pid: Number(pid), adj: Number(adj), command: command.join(' ') }
    })
}

describe('the OOM killer in a container with a small --memory', () => {
  it('takes a kernel, never tini or the server: the cell says out of memory, and the server answers after', async () => {
    // No swap: past the limit, the container's OOM killer must choose.
    rmSync('oom', { force: true })
    const { id, url } = await serveForE2B(['--memory', '640m', '--memory-swap', '640m'])
    const sandbox = await Sandbox.create()
    try {
      expect((await sandbox.runCode('x = 21\nx * 2')).text).toBe('42')
      const scores = await oomScores(id)
      const tini = scores.find((process) => process.pid === 1)
      const server = scores.find((process) => process.command.includes('dist/cli/bin.js serve'))
      // The kernels themselves, not the bubblewrap processes whose arguments name them.
      const kernels = scores.filter((process) => /^\S*python3\S* .*analyst_kernel\.py/.test(process.command))
      expect(tini?.command).toMatch(/tini/)
      expect(server).toBeDefined()
      expect(kernels.length).toBeGreaterThan(0)
      // Kernels at the most there is; the server and tini as low as the container lets them be.
      for (const kernel of kernels) expect(kernel.adj).toBe(1000)
      expect(server?.adj).toBeLessThanOrEqual(tini?.adj as number)
      expect(tini?.adj).toBeLessThan(1000)
      // The sandboxes' memory budget is 80% of the container's 640 MiB, not of the host's memory
      // (on cgroup v1, /proc/self/cgroup names the host's path; the mount is the container's group).
      const budget = await must([
        'exec',
        id,
        'node',
        '--input-type=module',
        '-e',
        "console.log((await import('/opt/analyst-server/dist/sandbox/local/cgroup.js')).memoryBudget())",
      ])
      expect(Number(budget)).toBe(Math.floor(640 * 2 ** 20 * 0.8))
      // 900 MiB written, past the container's 640 MiB, below the sandbox's own limit (2 GiB).
      const big = await sandbox.runCode("b = b'\\x01' * (900 * 2**20)")
      expect(big.error?.name).toBe('KernelDied')
      expect(big.error?.value).toMatch(/out of memory/)
      const after = await oomScores(id)
      expect(after.find((process) => process.pid === 1)?.command).toBe(tini?.command)
      expect(after.find((process) => process.command.includes('dist/cli/bin.js serve'))?.pid).toBe(
        server?.pid,
      )
      expect((await must(['inspect', '--format', '{{.State.Running}}', id])).trim()).toBe('true')
      // conmon noted the OOM in podman's working folder (podman.ts), not in the repository's.
      expect(existsSync('oom')).toBe(false)
      expect((await fetch(`${url}/healthz`)).ok).toBe(true)
      // The sandbox goes on in a new kernel, which replayed the cell before it.
      const next = await sandbox.runCode('x + 1')
      expect(next.text).toBe('22')
    } finally {
      await sandbox.kill()
    }
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
