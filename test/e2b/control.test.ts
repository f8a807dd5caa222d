/**
 * The control plane and the access checks of the E2B-compatible API, through the official SDK
 * where it reaches them and raw HTTP where it does not (a missing key, a wrong access token).
 */
import { AuthenticationError, Sandbox, SandboxNotFoundError } from '@e2b/code-interpreter'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type E2BServer, startE2BServer } from './server.js'

let e2b: E2BServer
beforeAll(async () => {
  e2b = await startE2BServer()
})
afterAll(async () => {
  await e2b?.close()
})

/** The tokens the server handed to the SDK, which it keeps on the instance. */
function tokensOf(sandbox: Sandbox) {
  const { envdAccessToken, trafficAccessToken } = sandbox as unknown as Record<string, string>
  return { envdAccessToken: envdAccessToken as string, trafficAccessToken: trafficAccessToken as string }
}

describe('E2B API: keys and access tokens', () => {
  it('refuses a wrong API key, and a missing one with a clear message', async () => {
    await expect(Sandbox.create({ apiKey: 'not-a-token' })).rejects.toBeInstanceOf(AuthenticationError)
    const response = await fetch(`${e2b.url}/v2/sandboxes`, { method: 'POST', body: '{"templateID":"base"}' })
    expect(response.status).toBe(401)
    expect(await response.json()).toEqual({ code: 401, message: expect.stringMatching(/E2B_API_KEY/) })
    // Its answers carry the request id the server's log lines use, as Analyst's own routes do.
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    const given = await fetch(`${e2b.url}/v2/sandboxes`, { headers: { 'x-request-id': 'from-the-proxy-7' } })
    expect(given.status).toBe(401)
    expect(given.headers.get('x-request-id')).toBe('from-the-proxy-7')
  })

  it('refuses calls into a sandbox without its access tokens', async () => {
    const sandbox = await Sandbox.create()
    try {
      const { envdAccessToken, trafficAccessToken } = tokensOf(sandbox)
      expect(envdAccessToken).toMatch(/^[0-9a-z]{16,}$/)
      const headers = { 'E2b-Sandbox-Id': sandbox.sandboxId, 'content-type': 'application/json' }
      const execute = (extra: Record<string, string>) =>
        fetch(`${e2b.url}/execute`, {
          method: 'POST',
          headers: { ...headers, 'E2b-Sandbox-Port': '49999', ...extra },
          body: JSON.stringify({ code: '1' }),
        })
      expect((await execute({})).status).toBe(401)
      expect((await execute({ 'E2B-Traffic-Access-Token': 'wrong' })).status).toBe(401)
      expect(
        (await execute({ 'E2B-Traffic-Access-Token': trafficAccessToken, 'X-Access-Token': 'wrong' })).status,
      ).toBe(401)
      const ok = await execute({ 'E2B-Traffic-Access-Token': trafficAccessToken })
      expect(ok.status).toBe(200)
      expect(ok.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
      const lines = (await ok.text()).split('\n')
      expect(lines.at(-1)).toBe('')
      expect(lines.slice(0, -1).map((line) => JSON.parse(line).type)).toEqual([
        'result',
        'number_of_executions',
        'end_of_execution',
      ])
      const files = (token?: string) =>
        fetch(`${e2b.url}/files?path=x.txt`, {
          headers: { ...headers, 'E2b-Sandbox-Port': '49983', ...(token ? { 'X-Access-Token': token } : {}) },
        })
      expect((await files()).status).toBe(401)
      expect((await files('wrong')).status).toBe(401)
      expect((await files(envdAccessToken)).status).toBe(404)
      const unknown = await fetch(`${e2b.url}/execute`, {
        method: 'POST',
        headers: { ...headers, 'E2b-Sandbox-Id': 'inotasandbox', 'E2b-Sandbox-Port': '49999' },
        body: '{"code":"1"}',
      })
      expect(unknown.status).toBe(502)
    } finally {
      await sandbox.kill()
    }
  })

  it("keeps each token's sandboxes to itself", async () => {
    const mine = await Sandbox.create({ metadata: { who: 'me' } })
    try {
      const theirs = { apiKey: e2b.otherToken }
      await expect(Sandbox.getInfo(mine.sandboxId, theirs)).rejects.toThrow(/not found/i)
      expect(await Sandbox.kill(mine.sandboxId, theirs)).toBe(false)
      await expect(Sandbox.connect(mine.sandboxId, theirs)).rejects.toThrow(/not found/i)
      const listed = await Sandbox.list(theirs).nextItems()
      expect(listed.map((s) => s.sandboxId)).not.toContain(mine.sandboxId)
      expect((await mine.runCode('1 + 1')).text).toBe('2')
    } finally {
      await mine.kill()
    }
  })
})

describe('E2B API: the control plane', () => {
  it('refuses templates it does not have and internet access it does not give', async () => {
    await expect(Sandbox.create('some-custom-template')).rejects.toThrow(/not available on this server/)
    await expect(Sandbox.create({ allowInternetAccess: true })).rejects.toThrow(
      /Internet access is off on this server.*--allow-network/,
    )
  })

  it('refuses what it would not do (egress rules, volumes) and says why of the routes it does not serve', async () => {
    await expect(Sandbox.create({ network: { denyOut: ['8.8.8.8'] } })).rejects.toThrow(
      /Egress rules.*not applied/,
    )
    await expect(Sandbox.create({ volumeMounts: { '/mnt/v': 'vol' } })).rejects.toThrow(
      /Volumes are not available/,
    )
    const sandbox = await Sandbox.create()
    try {
      await expect(sandbox.fork()).rejects.toThrow(/501: Forks copy a sandbox's running memory/)
      await expect(sandbox.updateNetwork({ denyOut: ['8.8.8.8'] })).rejects.toThrow(/501: Egress rules/)
      await expect(sandbox.createSnapshot()).rejects.toThrow(/501: Snapshots/)
    } finally {
      await sandbox.kill()
    }
    // Of a sandbox that is gone, E2B's answer comes first: it is not found.
    await expect(sandbox.fork()).rejects.toBeInstanceOf(SandboxNotFoundError)
  })

  it('creates, connects, describes, lists with a metadata filter and pages, and kills', async () => {
    const tag = `t${Date.now()}`
    const sandboxes = await Promise.all(
      [0, 1, 2].map((i) => Sandbox.create('base', { metadata: { tag, i: String(i) } })),
    )
    try {
      const [first] = sandboxes as [Sandbox, ...Sandbox[]]
      const info = await first.getInfo()
      expect(info).toMatchObject({ sandboxId: first.sandboxId, templateId: 'base', state: 'running' })
      expect(info.metadata).toEqual({ tag, i: '0' })
      expect(info.endAt.getTime() - info.startedAt.getTime()).toBe(300_000)

      const again = await Sandbox.connect(first.sandboxId)
      await again.runCode('shared = 5')
      expect((await first.runCode('shared')).text).toBe('5')

      const paginator = Sandbox.list({ query: { metadata: { tag } }, limit: 2 })
      const pageOne = await paginator.nextItems()
      expect(pageOne).toHaveLength(2)
      expect(paginator.hasNext).toBe(true)
      const pageTwo = await paginator.nextItems()
      expect(pageTwo).toHaveLength(1)
      expect(paginator.hasNext).toBe(false)
      expect(new Set([...pageOne, ...pageTwo].map((s) => s.sandboxId))).toEqual(
        new Set(sandboxes.map((s) => s.sandboxId)),
      )
      const one = await Sandbox.list({ query: { metadata: { tag, i: '1' } } }).nextItems()
      expect(one.map((s) => s.sandboxId)).toEqual([sandboxes[1]?.sandboxId])

      expect(await Sandbox.kill(first.sandboxId)).toBe(true)
      expect(await Sandbox.kill(first.sandboxId)).toBe(false)
      const gone = await fetch(`${e2b.url}/sandboxes/${first.sandboxId}`, {
        method: 'DELETE',
        headers: { 'X-API-KEY': e2b.token },
      })
      expect(gone.status).toBe(404)
      expect(await gone.json()).toMatchObject({ code: 404 })
    } finally {
      await Promise.all(sandboxes.map((s) => s.kill()))
    }
  })

  it('lists newest first, or oldest with order asc; pages follow the order; filters by start time', async () => {
    const tag = `order${Date.now()}`
    const made: Sandbox[] = []
    try {
      for (const i of [0, 1, 2]) {
        made.push(await Sandbox.create({ metadata: { tag, i: String(i) } }))
        // Start times a little apart, so that startedAfter/startedBefore can tell them apart.
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const ids = made.map((s) => s.sandboxId)
      const query = { metadata: { tag } }
      const ofList = async (options: Parameters<typeof Sandbox.list>[0]) =>
        (await Sandbox.list(options).nextItems()).map((s) => s.sandboxId)
      expect(await ofList({ query })).toEqual([...ids].reverse())
      expect(await ofList({ query, order: 'desc' })).toEqual([...ids].reverse())
      expect(await ofList({ query, order: 'asc' })).toEqual(ids)
      for (const order of ['asc', 'desc'] as const) {
        const paginator = Sandbox.list({ query, order, limit: 1 })
        const paged: string[] = []
        while (paginator.hasNext) paged.push(...(await paginator.nextItems()).map((s) => s.sandboxId))
        expect(paged).toEqual(order === 'asc' ? ids : [...ids].reverse())
      }
      // A page that starts at a sandbox killed meanwhile goes on from its place.
      const paginator = Sandbox.list({ query, order: 'asc', limit: 1 })
      expect((await paginator.nextItems()).map((s) => s.sandboxId)).toEqual([ids[0]])
      await made[1]?.kill()
      expect((await paginator.nextItems()).map((s) => s.sandboxId)).toEqual([ids[2]])

      const second = await (made[2] as Sandbox).getInfo()
      expect(await ofList({ query: { ...query, startedAfter: second.startedAt } })).toEqual([ids[2]])
      const first = await (made[0] as Sandbox).getInfo()
      const before = await fetch(
        `${e2b.url}/v2/sandboxes?metadata=${encodeURIComponent(`tag=${tag}`)}&startedBefore=${first.startedAt.toISOString()}`,
        { headers: { 'X-API-KEY': e2b.token } },
      )
      expect((await before.json()).map((s: { sandboxID: string }) => s.sandboxID)).toEqual([ids[0]])
      const wrong = await fetch(`${e2b.url}/v2/sandboxes?order=sideways&startedAfter=yesterday`, {
        headers: { 'X-API-KEY': e2b.token },
      })
      expect(wrong.status).toBe(400)
      expect((await wrong.json()).message).toMatch(/order must be asc or desc/)
    } finally {
      await Promise.all(made.map((s) => s.kill()))
    }
  })

  it('kills a sandbox when its timeout ends, and setTimeout moves the end', async () => {
    const sandbox = await Sandbox.create({ timeoutMs: 2000 })
    await sandbox.setTimeout(60_000)
    const info = await sandbox.getInfo()
    expect(info.endAt.getTime() - Date.now()).toBeGreaterThan(50_000)
    await sandbox.setTimeout(1000)
    await expect.poll(() => sandbox.isRunning(), { timeout: 15_000, interval: 250 }).toBe(false)
    await expect(Sandbox.getInfo(sandbox.sandboxId)).rejects.toThrow(/not found/i)
  })

  it("leaves Analyst's own routes and web UI where they were", async () => {
    expect(await (await fetch(`${e2b.url}/healthz`)).json()).toEqual({ ok: true })
    const sessions = await fetch(`${e2b.url}/api/sessions`, {
      headers: { authorization: `Bearer ${e2b.token}` },
    })
    expect(sessions.status).toBe(200)
    const unknownControl = await fetch(`${e2b.url}/v2/sandboxes/x/pause`, {
      method: 'POST',
      headers: { 'X-API-KEY': e2b.token },
    })
    expect(unknownControl.status).toBe(404)
  })
})
