import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ConflictError, NotFoundError, RateLimitError } from '../errors.js'
import { openStores, type Stores } from '../store/index.js'
import type { BuiltTemplate } from '../templates/types.js'
import { BuildElsewhereError, type TemplateBuild, TemplateBuilds } from './template-builds.js'

const opened: Array<{ stores: Stores; home: string }> = []
async function stores(): Promise<Stores> {
  const home = mkdtempSync(join(tmpdir(), 'analyst-builds-'))
  const stores = await openStores(home, {})
  opened.push({ stores, home })
  return stores
}
afterEach(async () => {
  for (const { stores, home } of opened.splice(0)) {
    await stores.close()
    rmSync(home, { recursive: true, force: true })
  }
})

const replica = (name: string, store: Stores, shared: boolean, lapseMs?: number, maxWaiting?: number) =>
  new TemplateBuilds({
    allowed: true,
    replica: name,
    store: store.templateBuilds,
    shared,
    ...(lapseMs ? { lapseMs } : {}),
    ...(maxWaiting ? { maxWaiting } : {}),
  })

/** A build that runs until it is cancelled. */
const hang = ({ signal }: { signal: AbortSignal }) =>
  new Promise<BuiltTemplate>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)))

const template = {
  id: 'f'.repeat(64),
  names: ['ok'],
  base: { kind: 'host' },
  python: { path: '/usr/bin/python3', version: '3.13.5' },
  languages: ['python'],
  packages: {},
  sizeBytes: 1,
  createdAt: new Date().toISOString(),
} as unknown as BuiltTemplate

describe('template builds on several replicas', () => {
  it("any replica over the store answers a build's state and log, and passes a cancel on to the one that runs it", async () => {
    const shared = await stores()
    const a = replica('host-a:1:x', shared, true)
    const b = replica('host-b:2:y', shared, true)
    const build = await a.start('team', 'alice', ({ reporter, signal }) => {
      reporter.progress(2, 3, 'RUN apt-get install jq')
      for (let i = 0; i < 99; i++) reporter.log(`line ${i}`, { step: 2 })
      reporter.log('pip found no x==9 in https://ci:s3cret@pypi.example/simple', { step: 2 })
      return new Promise<BuiltTemplate>((_, reject) =>
        signal.addEventListener('abort', () => reject(signal.reason)),
      )
    })
    expect(build.id).toMatch(/^[0-9a-f-]{36}-[0-9a-f]{8}$/)
    // The lines reach the store in batches; B reads them all, by offset.
    await expect.poll(async () => (await b.log(await b.get(build.id, 'alice'), 0, 1000)).length).toBe(101)
    const seen = await b.get(build.id, 'alice')
    expect(seen).toMatchObject({ name: 'team', status: 'building', progress: { step: 2, total: 3 } })
    expect((await b.log(seen, 99, 10)).map((line) => line.message)).toEqual([
      'line 98',
      'pip found no x==9 in https://ci:***@pypi.example/simple',
    ])
    await expect(b.get(build.id, 'bob')).rejects.toThrow(NotFoundError)

    // Cancelled on B: A reads the flag with its heartbeat and stops the build.
    expect(await b.cancel(build.id, 'alice')).toBe(true)
    await expect
      .poll(async () => (await b.get(build.id, 'alice')).status, { timeout: 10_000 })
      .toBe('cancelled')
    expect((await b.get(build.id, 'alice')).reason?.message).toBe('the build was cancelled')
    expect(await b.cancel(build.id, 'alice')).toBe(false)

    // A requested build (E2B's POST /v3/templates on B) is started by A, and ends ready for both.
    const requested = await b.request('ok', null, { resources: { milliCpus: 500 } })
    expect(await a.requested(requested, null, 'ok')).toEqual({ resources: { milliCpus: 500 } })
    await expect(a.requested(requested, null, 'other')).rejects.toThrow(/No build/)
    await a.start('ok', null, async () => template, requested)
    await expect(b.start('ok', null, async () => template, requested)).rejects.toMatchObject({ status: 409 })
    await expect.poll(async () => (await b.get(requested, null)).status).toBe('ready')
    expect((await b.get(requested, null)).template).toMatchObject({ id: template.id, base: 'host' })
    const followed: string[] = []
    for await (const event of b.follow(await b.get(requested, null), new AbortController().signal))
      followed.push(event.type)
    expect(followed).toEqual(['log', 'log', 'end'])
  })

  it('one build of a name at a time, and the cap on waiting builds, hold over every replica', async () => {
    const shared = await stores()
    const a = replica('host-a:1:x', shared, true, undefined, 1)
    const b = replica('host-b:2:y', shared, true, undefined, 1)
    try {
      const first = await a.start('team', null, hang)
      // Running, as the store has it (A writes its state within a quarter of a second).
      await expect.poll(async () => (await b.get(first.id, null)).status).toBe('building')
      const twice = await b.start('team', null, hang).catch((e: unknown) => e)
      expect(ConflictError.isInstance(twice), String(twice)).toBe(true)
      expect((twice as Error).message).toMatch(/"team" is under way already/)
      // A's second build waits for its first: the one waiting over both replicas.
      expect((await a.start('other', null, hang)).status).toBe('waiting')
      const over = await b.start('third', null, hang).catch((e: unknown) => e)
      expect(RateLimitError.isInstance(over), String(over)).toBe(true)
      expect((over as Error).message).toMatch(/1 template builds are waiting already/)
    } finally {
      await a.close()
      await b.close()
    }
    // Ended, the name is free on either replica.
    const c = replica('host-c:3:z', shared, true)
    const again = await c.start('team', null, async () => template)
    await expect.poll(async () => (await c.get(again.id, null)).status).toBe('ready')
    await c.close()
  })

  it('fails a build whose replica stopped beating, with that reason', async () => {
    const shared = await stores()
    const b = replica('host-b:2:y', shared, true, 1000)
    await shared.templateBuilds.createTemplateBuild({
      id: 'gone-1',
      name: 'x',
      owner: null,
      replica: 'host-a:dead',
    })
    await expect.poll(async () => (await b.get('gone-1', null)).status, { timeout: 10_000 }).toBe('error')
    expect((await b.get('gone-1', null)).reason?.message).toMatch(/replica that ran the build stopped/)
  })

  it("without a shared database, says a build runs on another replica (421, what to do); an unknown one of this replica's is a 404", async () => {
    const a = replica('host-a:1:x', await stores(), false)
    const b = replica('host-b:2:y', await stores(), false)
    let finish: () => void = () => {}
    const build: TemplateBuild = await a.start(
      'team',
      null,
      () => new Promise((_, reject) => (finish = () => reject(new Error('stopped')))),
    )
    expect((await a.get(build.id, null)).name).toBe('team')
    const elsewhere = await b.get(build.id, null).catch((error: unknown) => error)
    expect(BuildElsewhereError.isInstance(elsewhere)).toBe(true)
    expect(elsewhere).toMatchObject({
      status: 421,
      message: expect.stringContaining('runs on another replica'),
      hint: expect.stringContaining('ANALYST_DATABASE_URL'),
    })
    await expect(a.get(a.newId(), null)).rejects.toThrow(NotFoundError)
    await expect(a.get('not-an-id', null)).rejects.toThrow(/No template build not-an-id/)
    await a.cancel(build.id, null)
    finish()
  })
})
