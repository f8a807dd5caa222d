#!/usr/bin/env node
// What authorization costs per request: the same request (an /api path that is no route, so the
// answer after auth is a plain 404 with no store work) through the app portless (app.request),
// with no auth at all (the baseline, loopback's default), an ANALYST_TOKEN token, a user's API
// key, and a signed-in browser's cookie (its CSRF check is for writes; this is a read), over the
// SQLite store, in one run. A key and a cookie come from sign-in's identity cache after their first
// request; the same two with the cache off (a store read per request, as before the cache) are
// measured beside them. Goal: ≤ 0.2 ms added at p50. --postgres: the same over a throwaway
// PostgreSQL cluster (the replicas' store, whose read is a round trip) instead of SQLite.
// Usage: node bench/auth.mjs [--quick] [--postgres]
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../dist/server/app.js'
import { hashSecret, newSecret, SignIn } from '../dist/server/auth/index.js'
import { SessionService } from '../dist/session/index.js'
import { openStores } from '../dist/store/index.js'
import { startPostgres } from '../dist/test/support/postgres.js'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const N = quick ? 2_000 : 20_000
const WARMUP = 500
const TOKEN = 'bench-token'

const home = mkdtempSync(join(tmpdir(), 'analyst-bench-auth-'))
const cluster = process.argv.includes('--postgres') ? await startPostgres() : undefined
const stores = await openStores(home, cluster ? { ANALYST_DATABASE_URL: await cluster.createDatabase() } : {})
const service = new SessionService({
  history: stores.history,
  blobs: stores.blobs,
  provider: {
    specificationVersion: 'v1',
    provider: 'none',
    create: () => Promise.reject(new Error('no sandboxes here')),
  },
  model: () => Promise.reject(new Error('no model here')),
  cacheDir: join(home, 'cache'),
})
const settings = {
  issuer: 'http://127.0.0.1:1',
  clientId: 'bench',
  publicUrl: 'http://127.0.0.1:8787',
  scopes: 'openid',
  groupsClaim: 'groups',
  allowedGroups: [],
  allowedDomains: [],
  adminGroups: [],
  idleMs: 3_600_000,
  maxAgeMs: 86_400_000,
}
const signin = new SignIn({ settings, store: stores.auth, tokens: [TOKEN] })
const uncached = new SignIn({ settings: { ...settings, cacheTtlMs: 0 }, store: stores.auth, tokens: [TOKEN] })
const user = await stores.auth.upsertUser({
  issuer: settings.issuer,
  subject: 'bench',
  name: 'Bench',
  groups: [],
  admin: false,
})
const { key } = await signin.createKey(user, 'bench')
const cookie = newSecret()
await stores.auth.createBrowserSession({
  hash: hashSecret(cookie),
  userId: user.id,
  csrfToken: newSecret(),
  expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
})

const open = createApp({ service, tokens: [], uploadDir: join(home, 'uploads') })
const signed = createApp({ service, tokens: [TOKEN], uploadDir: join(home, 'uploads'), signin })
const reading = createApp({ service, tokens: [TOKEN], uploadDir: join(home, 'uploads'), signin: uncached })
const cases = [
  { name: 'no auth (baseline)', app: open, headers: {}, expect: 404 },
  { name: 'ANALYST_TOKEN token', app: signed, headers: { authorization: `Bearer ${TOKEN}` }, expect: 404 },
  { name: 'API key', app: signed, headers: { authorization: `Bearer ${key}` }, expect: 404 },
  { name: 'browser cookie', app: signed, headers: { cookie: `analyst_session=${cookie}` }, expect: 404 },
  { name: 'API key, cache off', app: reading, headers: { authorization: `Bearer ${key}` }, expect: 404 },
  {
    name: 'browser cookie, cache off',
    app: reading,
    headers: { cookie: `analyst_session=${cookie}` },
    expect: 404,
  },
]

async function measure({ app, headers, expect }) {
  const times = []
  for (let i = 0; i < N + WARMUP; i++) {
    const started = performance.now()
    const response = await app.request('/api/bench-nothing', { headers })
    const elapsed = performance.now() - started
    if (response.status !== expect) throw new Error(`expected ${expect}, got ${response.status}`)
    if (i >= WARMUP) times.push(elapsed)
  }
  return times
}

const load = loadavg()[0]
// Interleaved rounds, so that a busy moment of the machine falls on every case alike.
const ROUNDS = 4
const samples = new Map(cases.map((c) => [c.name, []]))
for (let round = 0; round < ROUNDS; round++)
  for (const c of cases) samples.get(c.name).push(...(await measure({ ...c, headers: c.headers })))
const base = percentile(samples.get(cases[0].name), 50)
const rows = cases.map((c) => {
  const times = samples.get(c.name)
  const p50 = percentile(times, 50)
  return [
    c.name,
    `${p50.toFixed(3)} ms`,
    `${percentile(times, 99).toFixed(3)} ms`,
    `${(p50 - base).toFixed(3)} ms`,
    `${(p50 / base).toFixed(2)}×`,
  ]
})
console.log(`\n## Authorization per request (${machine()})\n`)
console.log(
  `${ROUNDS * N} requests per case through app.request, ${cluster ? 'PostgreSQL' : 'SQLite'} store; load ${load.toFixed(1)} → ${loadavg()[0].toFixed(1)}.\n`,
)
console.log(table(['auth', 'p50', 'p99', 'added at p50', 'vs no auth'], rows))
rmSync(home, { recursive: true, force: true })
await stores.close()
await cluster?.stop()
