/**
 * What every store of template builds must do, as one suite each database runs (SQLite and
 * PostgreSQL): `describeTemplateBuildStoreConformance({ name, open })`.
 */
import { createHash } from 'node:crypto'
import { text } from 'node:stream/consumers'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ConflictError, RateLimitError, TooLargeError } from '../errors.js'
import type { TemplateBuildLogLine, TemplateBuildStore, TemplateFileStore } from './types.js'

export interface OpenedTemplateBuildStores {
  templateBuilds: TemplateBuildStore
  templateFiles: TemplateFileStore
  close(): Promise<void>
}

/** Content of `bytes` bytes, in pieces of odd sizes (not the store's chunks). */
async function* content(bytes: number, fill = 'x') {
  for (let sent = 0; sent < bytes; sent += 100_003)
    yield Buffer.from(fill.repeat(Math.min(100_003, bytes - sent)))
}

const line = (message: string, step?: number): TemplateBuildLogLine => ({
  timestamp: new Date().toISOString(),
  level: 'info',
  message,
  ...(step !== undefined ? { step } : {}),
})

export function describeTemplateBuildStoreConformance(options: {
  name: string
  open: () => Promise<OpenedTemplateBuildStores>
  /**
   * Where other processes write the same database at once (PostgreSQL): its template files as
   * another process opens them, and how many chunks of files not yet committed it holds.
   */
  concurrent?: (stores: OpenedTemplateBuildStores) => {
    files: TemplateFileStore
    partialChunks: () => Promise<number>
  }
}) {
  describe(`template build store conformance: ${options.name}`, () => {
    let stores: OpenedTemplateBuildStores
    let builds: TemplateBuildStore
    beforeEach(async () => {
      stores = await options.open()
      builds = stores.templateBuilds
    })
    afterEach(async () => {
      await stores.close()
    })

    it("keeps a build's state and its log by offset, a retried batch once; cancel is asked of its runner", async () => {
      const created = await builds.createTemplateBuild({
        id: 'b1',
        name: 'team',
        owner: 'alice',
        replica: 'a',
      })
      expect(created).toMatchObject({
        id: 'b1',
        name: 'team',
        owner: 'alice',
        status: 'waiting',
        replica: 'a',
      })
      expect(created.cancelRequested).toBe(false)
      expect(created.beatMsAgo).toBeGreaterThanOrEqual(0)
      expect(await builds.getTemplateBuild('nope')).toBeUndefined()

      await builds.updateTemplateBuild('b1', {
        status: 'building',
        progress: { step: 2, total: 3, title: 'RUN x' },
      })
      await builds.appendTemplateBuildLog('b1', 0, [line('one'), line('two', 2)])
      await builds.appendTemplateBuildLog('b1', 1, [line('two again'), line('three')])
      expect((await builds.templateBuildLog('b1', 0, 100)).map((l) => l.message)).toEqual([
        'one',
        'two',
        'three',
      ])
      expect(await builds.templateBuildLog('b1', 1, 1)).toMatchObject([{ message: 'two', step: 2 }])
      expect(await builds.templateBuildLog('b1', 3, 100)).toEqual([])

      // Another replica asks to cancel; the runner learns it with its next heartbeat.
      expect(await builds.beatTemplateBuilds('a', ['b1'])).toEqual([])
      expect(await builds.requestTemplateBuildCancel('b1')).toBe(true)
      expect(await builds.beatTemplateBuilds('a', ['b1'])).toEqual(['b1'])
      await builds.updateTemplateBuild('b1', {
        status: 'cancelled',
        reason: { message: 'the build was cancelled', step: 2 },
        finished: true,
      })
      expect(await builds.getTemplateBuild('b1')).toMatchObject({
        status: 'cancelled',
        progress: { step: 2, total: 3, title: 'RUN x' },
        reason: { message: 'the build was cancelled', step: 2 },
        finishedAt: expect.any(String),
      })
      expect(await builds.requestTemplateBuildCancel('b1')).toBe(false)

      await builds.createTemplateBuild({ id: 'b2', name: 'ok', owner: null, replica: 'a' })
      await builds.updateTemplateBuild('b2', {
        status: 'ready',
        template: { id: 'f00', names: ['ok'] },
        finished: true,
      })
      expect(await builds.getTemplateBuild('b2')).toMatchObject({
        status: 'ready',
        owner: null,
        template: { id: 'f00' },
      })
    })

    it('a requested build is claimed by one replica only; forgotten when old', async () => {
      const requested = await builds.createTemplateBuild({
        id: 'r1',
        name: 'e2b',
        owner: null,
        request: { resources: { memoryBytes: 1024 } },
      })
      expect(requested.replica).toBeUndefined()
      expect(requested.beatMsAgo).toBeUndefined()
      expect(requested.request).toEqual({ resources: { memoryBytes: 1024 } })
      expect(await builds.claimTemplateBuild('r1', 'b')).toBe(true)
      expect(await builds.claimTemplateBuild('r1', 'a')).toBe(false)
      expect(await builds.claimTemplateBuild('nope', 'a')).toBe(false)
      expect(await builds.getTemplateBuild('r1')).toMatchObject({ replica: 'b', status: 'waiting' })

      await builds.createTemplateBuild({ id: 'r2', name: 'never', owner: null })
      await builds.createTemplateBuild({ id: 'done', name: 'x', owner: null, replica: 'a' })
      await builds.appendTemplateBuildLog('done', 0, [line('kept until forgotten')])
      await builds.updateTemplateBuild('done', { status: 'ready', finished: true })
      const later = new Date(Date.now() + 60_000).toISOString()
      // r1 runs (not forgotten); r2 was never started, done has ended.
      expect(await builds.forgetTemplateBuilds(later)).toBe(2)
      expect(await builds.getTemplateBuild('r2')).toBeUndefined()
      expect(await builds.templateBuildLog('done', 0, 10)).toEqual([])
      expect(await builds.getTemplateBuild('r1')).toBeDefined()
    })

    it('one build of a name is under way at a time over every replica; the waiting builds are counted', async () => {
      await builds.createTemplateBuild({ id: 'one', name: 'busy', owner: null, replica: 'a' })
      const second = await builds
        .createTemplateBuild({ id: 'two', name: 'busy', owner: null, replica: 'b' })
        .catch((e: unknown) => e)
      expect(ConflictError.isInstance(second), String(second)).toBe(true)
      expect((second as Error).message).toMatch(/"busy" is under way/)
      // Requested (E2B's POST /v3/templates) is not under way; claiming it is.
      await builds.createTemplateBuild({ id: 'asked', name: 'busy', owner: null })
      const claimed = await builds.claimTemplateBuild('asked', 'b').catch((e: unknown) => e)
      expect(ConflictError.isInstance(claimed), String(claimed)).toBe(true)
      await builds.createTemplateBuild({ id: 'other', name: 'free', owner: null, replica: 'b' })
      expect(await builds.countWaitingTemplateBuilds()).toBe(2)
      await builds.updateTemplateBuild('one', { status: 'ready', finished: true })
      expect(await builds.claimTemplateBuild('asked', 'b')).toBe(true)
      expect(await builds.countWaitingTemplateBuilds()).toBe(2)
    })

    it('the cap on waiting builds is counted and taken at once: of five at once under a cap of two, two are taken', async () => {
      await builds.createTemplateBuild({ id: 'asked', name: 'late', owner: null })
      // Connections open first (PostgreSQL's pool), so that the five meet in the database at once.
      await Promise.all([1, 2, 3, 4, 5].map(() => builds.countWaitingTemplateBuilds()))
      const taken = await Promise.allSettled(
        [1, 2, 3, 4, 5].map((n) =>
          builds.createTemplateBuild({
            id: `w${n}`,
            name: `n${n}`,
            owner: null,
            replica: 'a',
            maxWaiting: 2,
          }),
        ),
      )
      expect(taken.filter((result) => result.status === 'fulfilled')).toHaveLength(2)
      for (const result of taken)
        if (result.status === 'rejected')
          expect(RateLimitError.isInstance(result.reason), String(result.reason)).toBe(true)
      expect(await builds.countWaitingTemplateBuilds()).toBe(2)
      // A requested build is taken under the same cap.
      await expect(builds.claimTemplateBuild('asked', 'b', 2)).rejects.toThrow(
        /2 template builds are waiting already/,
      )
      expect(await builds.claimTemplateBuild('asked', 'b', 3)).toBe(true)
    })

    it('keeps template files in chunks by key: read back whole and checked, replaced, one per name, capped, expired', async () => {
      const files = stores.templateFiles
      const bytes = 700_000 // three chunks of 256 KiB
      const kept = await files.putTemplateFile('copy:o:h1', content(bytes))
      expect(kept).toMatchObject({
        key: 'copy:o:h1',
        size: bytes,
        sha256: createHash('sha256').update('x'.repeat(bytes)).digest('hex'),
      })
      expect(kept.name).toBeUndefined()
      expect(await text((await files.readTemplateFile('copy:o:h1')) as AsyncIterable<Buffer>)).toBe(
        'x'.repeat(bytes),
      )
      await files.putTemplateFile('copy:o:h1', content(10, 'y'))
      expect(await text((await files.readTemplateFile('copy:o:h1')) as AsyncIterable<Buffer>)).toBe(
        'y'.repeat(10),
      )
      expect(await files.readTemplateFile('copy:o:nope')).toBeUndefined()

      const over = await files
        .putTemplateFile('copy:o:big', content(300_000), { maxBytes: 200_000 })
        .catch((e: unknown) => e)
      expect(TooLargeError.isInstance(over), String(over)).toBe(true)
      expect(await files.statTemplateFile('copy:o:big')).toBeUndefined()

      await files.putTemplateFile('template:1', content(5), { name: 'team' })
      expect((await files.namedTemplateFile('team'))?.key).toBe('template:1')
      await files.putTemplateFile('template:2', content(6), { name: 'team' })
      expect(await files.namedTemplateFile('team')).toMatchObject({
        key: 'template:2',
        name: 'team',
        size: 6,
      })
      expect(await files.statTemplateFile('template:1')).toBeUndefined()

      const later = new Date(Date.now() + 60_000).toISOString()
      expect(await files.forgetTemplateFiles('copy:', later)).toBe(1)
      expect(await files.statTemplateFile('copy:o:h1')).toBeUndefined()
      expect(await files.statTemplateFile('template:2')).toBeDefined()
    })

    it('a file is seen whole or not at all while it is written; a sweep leaves the file being written', async () => {
      const files = stores.templateFiles
      let release = () => {}
      const held = new Promise<void>((resolve) => {
        release = resolve
      })
      async function* slow() {
        yield* content(600_000, 'z')
        await held
        yield Buffer.from('end')
      }
      const writing = files.putTemplateFile('template:slow', slow(), { name: 'slow' })
      const other = options.concurrent?.(stores)
      try {
        // Another process's sweep leaves it (its writer holds it); so does this one's.
        if (other) {
          await expect.poll(other.partialChunks, { timeout: 10_000 }).toBeGreaterThan(0)
          expect(await other.files.forgetPartialTemplateFiles(10)).toBe(0)
        }
        expect(await files.forgetPartialTemplateFiles(10)).toBe(0)
        expect(await files.statTemplateFile('template:slow')).toBeUndefined()
        expect(await files.namedTemplateFile('slow')).toBeUndefined()
      } finally {
        release()
      }
      const kept = await writing
      expect(kept.size).toBe(600_003)
      expect(Math.abs(Date.parse(kept.createdAt) - (await files.databaseTimeMs()))).toBeLessThan(60_000)
      const read = await text((await files.readTemplateFile('template:slow')) as AsyncIterable<Buffer>)
      expect(read).toBe(`${'z'.repeat(600_000)}end`)
      if (other) expect(await other.partialChunks()).toBe(0)
      expect(await files.forgetPartialTemplateFiles(10)).toBe(0)
    })

    it('fails the builds whose replica stopped beating, with the reason; live and requested ones stay', async () => {
      await builds.createTemplateBuild({ id: 'dead', name: 'a', owner: null, replica: 'gone' })
      await builds.createTemplateBuild({ id: 'live', name: 'b', owner: null, replica: 'here' })
      await builds.createTemplateBuild({ id: 'asked', name: 'c', owner: null })
      // Lapsed after 1 s without a beat: wait for the clock to pass it, beating 'live' meanwhile.
      await expect
        .poll(
          async () => {
            await builds.beatTemplateBuilds('here', ['live'])
            return (await builds.getTemplateBuild('dead'))?.beatMsAgo ?? 0
          },
          { timeout: 10_000 },
        )
        .toBeGreaterThan(1100)
      await builds.beatTemplateBuilds('here', ['live'])
      expect(await builds.failLapsedTemplateBuilds(1000, 'its replica stopped')).toBe(1)
      expect(await builds.getTemplateBuild('dead')).toMatchObject({
        status: 'error',
        reason: { message: 'its replica stopped' },
        finishedAt: expect.any(String),
      })
      expect((await builds.getTemplateBuild('live'))?.status).toBe('waiting')
      expect((await builds.getTemplateBuild('asked'))?.status).toBe('waiting')
    })
  })
}
