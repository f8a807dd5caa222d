/**
 * The sandboxes' memory budget (ANALYST_MEMORY_BUDGET) with real cgroups, as root: a kernel that the
 * OOM killer takes because all sandboxes together filled the budget (not its own limit) says so,
 * with what to do, through E2B's API; the idle session
 * used least recently is paused when the budget runs short, and its next question rebuilds its
 * state by replay and says so; with nothing idle to pause, a question is refused at once with 503,
 * Retry-After, and the owner's sessions named, and a paused E2B sandbox's next cell fails with the
 * reason in the SDK's own error (its status line), not a bare `503 Service Unavailable`.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from '@e2b/code-interpreter'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Sandbox as AnalystSandbox, LocalProvider } from '../../src/index.js'
import { ScriptedModel } from '../../src/models/scripted.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { openApiDocument } from '../../src/server/openapi.js'
import { askOverSse, type SseEvent } from '../support/sse.js'
import { waitFor } from '../support/wait.js'

const isRoot = process.geteuid?.() === 0
// Read when this process makes its first sandbox: room for about two sessions that hold 150 MiB.
process.env.ANALYST_MEMORY_BUDGET = '420M'

/** Memory held in 10 MiB steps, as a frame read in chunks grows: the budget's watch sees it coming. */
const HOLD = (name: string, mib: number) =>
  `import time\n${name} = []\nfor _ in range(${mib / 10}):\n    ${name}.append(b'x' * (10 * 1024**2))\n    time.sleep(0.1)\nx = 41\nprint('held')`

describe.skipIf(!isRoot)('the memory budget of the sandboxes (real cgroups)', () => {
  const provider = new LocalProvider({ poolSize: 0 })
  let server: RunningServer
  let home: string
  const model = new ScriptedModel([
    { code: HOLD('a', 150) },
    { text: 'A holds.' },
    { code: HOLD('b', 150) },
    { text: 'B holds.' },
    { code: HOLD('c', 150) },
    { text: 'C holds.' },
    // A again, rebuilt: x came back with the replay.
    { code: 'print(x + 1)' },
    { text: 'A answers.' },
    // C holds more, and stays busy while B asks (refused before any model call).
    { code: `${HOLD('more', 200)}\nprint('busy', flush=True)\ntime.sleep(120)` },
    // A once more, rebuilt again: the E2B sandbox, idle, is paused for it.
    { code: 'print(x + 1)' },
    { text: 'A answers again.' },
    // B holds more, slowly (the budget's watch pauses an idle E2B sandbox in time), and stays busy.
    {
      code: "import time\nmore = []\nfor _ in range(20):\n    more.append(b'x' * (10 * 1024**2))\n    time.sleep(0.3)\nprint('busy', flush=True)\ntime.sleep(120)",
    },
  ])

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'analyst-budget-'))
    server = await startServer({
      port: 0,
      home,
      tokens: [],
      provider,
      idleMs: 0,
      model: async () => ({
        model,
        spec: 'scripted:test',
        provider: 'custom',
        modelId: 'test',
        mode: 'tools',
      }),
    })
  })
  afterAll(async () => {
    await server?.close()
    await provider.close()
    rmSync(home, { recursive: true, force: true })
  })

  let ids: string[] = []
  /** Asks in a session whose cell holds memory and stays busy: resolves once it is busy; `stop` ends it. */
  const busyIn = async (id: string) => {
    const stop = new AbortController()
    let busy = false
    const asking = askOverSse(
      server.url,
      id,
      'Hold more.',
      {},
      (event) => {
        if (event.event === 'stdout' && String(event.data.text).includes('busy')) busy = true
      },
      stop.signal,
    ).catch(() => [])
    await waitFor(() => busy, { what: 'the busy cell', timeoutMs: 60_000 })
    return async () => {
      stop.abort()
      await asking
    }
  }
  const newSession = async () =>
    (
      (await (await fetch(`${server.url}/api/sessions`, { method: 'POST', body: '{}' })).json()) as {
        id: string
      }
    ).id
  const stdoutOf = (events: SseEvent[]) =>
    events
      .filter((event) => event.event === 'stdout')
      .map((event) => event.data.text)
      .join('')

  it("a kernel the budget's OOM killer ends (under its own limit) says it was the budget, through E2B's API too", async () => {
    Object.assign(process.env, { E2B_API_URL: server.url, E2B_SANDBOX_URL: server.url, E2B_API_KEY: 'any' })
    // Another sandbox (the server's own, never paused) holds 100 MiB; this one asks for 400 MiB,
    // far under its own limit (2 GiB): all together pass the budget, and the OOM killer takes the
    // largest, this one.
    const other = await AnalystSandbox.create({ provider })
    const sandbox = await Sandbox.create()
    try {
      expect((await other.runCode("held = b'o' * (100 * 1024**2)")).error).toBeUndefined()
      await sandbox.runCode('before = 41')
      const killed = await sandbox.runCode("big = b'x' * (400 * 1024**2)")
      expect(killed.error?.name, JSON.stringify(killed.error)).toBe('KernelDied')
      expect(killed.error?.value).toMatch(
        /out of memory: the memory budget of all sandboxes \(ANALYST_MEMORY_BUDGET, 420 MiB\) was full, not this sandbox's own limit \(2 GiB\); the other sandboxes use \d+(\.\d)? MiB of it: try again/,
      )
      // The fix, in the words of E2B's clients: not memoryMB, which would not have helped.
      expect(killed.error?.value).toMatch(
        /Try again once other sandboxes have finished.*\(ANALYST_MEMORY_BUDGET\)\.$/,
      )
      expect(killed.error?.value).not.toMatch(/memoryMB/)
      const next = await sandbox.runCode('before + 1')
      expect(next.text).toBe('42')
      expect(next.logs.stderr.join('')).toMatch(
        /kernel died in the last cell \(out of memory: the memory budget of all sandboxes/,
      )
      expect((await other.runCode('len(held)')).text).toBe(String(100 * 1024 ** 2))
    } finally {
      await sandbox.kill()
      await other.kill()
    }
  })

  it('pauses the idle session used least recently, and its next question rebuilds it and says so', async () => {
    ids = [await newSession(), await newSession(), await newSession()]
    const [a, b, c] = ids as [string, string, string]
    expect(stdoutOf(await askOverSse(server.url, a, 'Hold A.'))).toContain('held')
    expect(stdoutOf(await askOverSse(server.url, b, 'Hold B.'))).toContain('held')
    expect(stdoutOf(await askOverSse(server.url, c, 'Hold C.'))).toContain('held')
    // Three sessions of 150 MiB do not fit in 90% of 420 MiB: A, the least recently used, is paused.
    await waitFor(() => server.service.liveSessions === 2, {
      what: () => `a session paused (${server.service.liveSessions} live)`,
    })
    const again = await askOverSse(server.url, a, 'And x + 1?')
    const preparing = again.find((event) => event.event === 'preparing')
    expect(preparing?.data).toMatchObject({
      paused: 'memory',
      message: expect.stringMatching(/paused to free memory; its state will be rebuilt/),
    })
    expect(stdoutOf(again)).toContain('42')
    expect(again.at(-1)?.data).toMatchObject({ type: 'done', result: { answer: 'A answers.' } })
    // B was the least recently used then: it made room for A.
    await waitFor(() => server.service.liveSessions === 2, { what: 'one session paused for A' })
    const metrics = await (await fetch(`${server.url}/metrics`)).text()
    expect(metrics).toMatch(new RegExp(`^analyst_sandbox_memory_budget_bytes ${420 * 1024 ** 2}$`, 'm'))
    const used = Number(metrics.match(/^analyst_sandbox_memory_bytes (\d+)$/m)?.[1])
    expect(used).toBeGreaterThan(300 * 1024 ** 2) // two sessions of 150 MiB
    expect(used).toBeLessThan(420 * 1024 ** 2)
  })

  it('with nothing idle to pause, a question is refused at once: 503, Retry-After, the owner’s sessions named', async () => {
    // A and C are live: C asks for more and stays busy; A, idle, is paused for it; then B asks.
    const [, other, busyOne] = ids as [string, string, string]
    const stop = await busyIn(busyOne)
    expect(server.service.liveSessions).toBe(1)
    const started = Date.now()
    const refused = await fetch(`${server.url}/api/sessions/${other}/ask`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ question: 'Anything?' }),
    })
    expect(refused.status).toBe(503)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    const { error } = (await refused.json()) as { error: { message: string; hint?: string } }
    expect(error.message).toMatch(/memory budget, and none is idle/)
    expect(error.message).toContain(`session ${busyOne}`)
    expect(error.message).toMatch(/busy/)
    expect(error.hint).toMatch(/Try again in \d+ s/)
    // Said at once, not after a wait for memory.
    expect(Date.now() - started).toBeLessThan(10_000)
    // As the OpenAPI document says of a question.
    const ask = (openApiDocument.paths as Record<string, Record<string, { responses?: object }>>)[
      '/api/sessions/{id}/ask'
    ]?.post?.responses as Record<string, { description?: string }>
    expect(ask[503]?.description).toMatch(/memory budget/)
    await stop()
  })

  it('an idle E2B sandbox is paused the same way, and its next call resumes it by replay', async () => {
    Object.assign(process.env, { E2B_API_URL: server.url, E2B_SANDBOX_URL: server.url, E2B_API_KEY: 'any' })
    // The busy session of the case above is still stopping its cell (its client left): until then
    // a create is refused with 503 and Retry-After, as it says, and taken once the cell has ended.
    const sandbox = await waitFor(
      () =>
        Sandbox.create().catch((error: Error) => {
          if (error.name === 'ServiceBusyError') return undefined
          throw error
        }),
      { what: 'room for the sandbox once the busy cell has stopped', timeoutMs: 60_000, intervalMs: 500 },
    )
    try {
      expect((await sandbox.runCode(HOLD('e', 220))).logs.stdout.join('')).toContain('held')
      // A session asks again: its replay needs room, and the sandbox, idle, is paused for it.
      const [a] = ids as [string]
      await askOverSse(server.url, a, 'And x + 1?')
      await waitFor(async () => (await sandbox.getInfo()).state === 'paused', { what: 'the sandbox paused' })
      const resumed = await sandbox.runCode('x + 1')
      expect(resumed.text).toBe('42')
      expect((await sandbox.getInfo()).state).toBe('running')
    } finally {
      await sandbox.kill()
    }
  })

  it("a paused E2B sandbox with no room to resume: the SDK's runCode says why, not a bare 503", async () => {
    const sandbox = await Sandbox.create()
    try {
      await sandbox.runCode("y = b'y' * (60 * 1024**2)")
      // B replays its 150 MiB and holds 200 more, busy: the idle sandbox is paused for it.
      const stop = await busyIn(ids[1] as string)
      try {
        await waitFor(async () => (await sandbox.getInfo()).state === 'paused', {
          what: 'the sandbox paused',
        })
        // Its next call resumes it, as autoResume does; nothing idle is left to pause for that.
        const refused = await sandbox.runCode('len(y)').then(
          () => undefined,
          (error: Error) => error,
        )
        expect(refused?.name).toBe('SandboxError')
        expect(refused?.message).toMatch(/^503 The server's sandboxes use .* memory budget, and none is idle/)
        expect(refused?.message).toMatch(/Try again in \d+ s/)
      } finally {
        await stop()
      }
    } finally {
      await sandbox.kill()
    }
  })
})
