import { createReadStream, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NotFoundError } from '../errors.js'
import { openStores, type Stores } from '../store/index.js'
import type { StoredTemplateFile, TemplateFileStore } from '../store/types.js'
import { exportTemplate } from '../templates/oci.js'
import { openTemplates } from '../templates/store.js'
import { commitTemplate } from '../test/support/templates.js'
import { TemplateShare } from './template-share.js'

let work: string
let stores: Stores
beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'analyst-template-share-'))
  stores = await openStores(join(work, 'db'), {})
})
afterAll(async () => {
  await stores?.close()
  rmSync(work, { recursive: true, force: true })
})

/** A replica: its own home, the one store (or `files`, the store as another database shows it). */
function replica(
  name: string,
  shared = true,
  options: { files?: TemplateFileStore; keepRemovalsMs?: number } = {},
) {
  const home = join(work, name)
  const catalog = openTemplates(home)
  const files = options.files ?? stores.templateFiles
  return { home, catalog, share: new TemplateShare({ ...options, home, catalog, files, shared }) }
}

/** The store as a database whose clock runs `ms` ahead of this host's would show it. */
function clockAhead(ms: number): TemplateFileStore {
  const files = stores.templateFiles
  const shift = <T extends StoredTemplateFile | undefined>(file: T): T =>
    file && { ...file, createdAt: new Date(Date.parse(file.createdAt) + ms).toISOString() }
  return {
    specificationVersion: 'v1',
    putTemplateFile: async (...args) => shift(await files.putTemplateFile(...args)),
    statTemplateFile: async (key) => shift(await files.statTemplateFile(key)),
    readTemplateFile: (key) => files.readTemplateFile(key),
    namedTemplateFile: async (name) => shift(await files.namedTemplateFile(name)),
    forgetTemplateFiles: (prefix, before) =>
      files.forgetTemplateFiles(prefix, new Date(Date.parse(before) - ms).toISOString()),
    forgetPartialTemplateFiles: (limit) => files.forgetPartialTemplateFiles(limit),
    databaseTimeMs: async () => (await files.databaseTimeMs()) + ms,
  }
}

/** A template over the host with an env only (its export is a few KiB), built at `createdAt` (default now). */
const hostTemplate = (home: string, id: string, value: string, name = 'team', createdAt?: string) =>
  commitTemplate(home, id, {
    name,
    manifest: {
      base: { kind: 'host' },
      hasRootfs: false,
      env: { BUILT: value },
      ...(createdAt ? { createdAt } : {}),
    },
  })

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString()

describe('templates shared through the store', () => {
  it('a replica brings the build a name points at, and the newer one when the name moves; by id too', async () => {
    const a = replica('a')
    const b = replica('b')
    const [first, second] = ['1'.repeat(64), '2'.repeat(64)]
    expect(await a.share.publish(hostTemplate(a.home, first, 'one'), 'team')).toBeGreaterThan(0)
    expect(() => b.catalog.resolve('team')).toThrow(NotFoundError)
    await b.share.ensure('team')
    expect(b.catalog.resolve('team')).toMatchObject({ id: first, env: { BUILT: 'one' } })

    await a.share.publish(hostTemplate(a.home, second, 'two'), 'team')
    await b.share.ensure('team')
    expect(b.catalog.resolve('team')).toMatchObject({ id: second, env: { BUILT: 'two' } })
    // A session made in the first build keeps it: here still, by id.
    await b.share.ensure(first)
    expect(b.catalog.get(first)?.env).toEqual({ BUILT: 'one' })

    // Another replica asked by id (a session reopened there) gets that build, and no name with it.
    const c = replica('c')
    await c.share.ensure(second)
    expect(c.catalog.get(second)?.names).toEqual([])
    // Names the store does not know are the catalog's to refuse.
    await c.share.ensure('nothing-here')
    expect(() => c.catalog.resolve('nothing-here')).toThrow(NotFoundError)
  })

  it('refuses an archive that holds another build than its key says; forgets a removed template', async () => {
    const a = replica('a2')
    const b = replica('b2')
    const [real, claimed] = ['3'.repeat(64), '4'.repeat(64)]
    const template = hostTemplate(a.home, real, 'real')
    const archive = join(work, 'real.tar')
    await exportTemplate({ ...template, names: [] }, archive, a.home)
    await stores.templateFiles.putTemplateFile(`template:${claimed}`, createReadStream(archive))
    await expect(b.share.ensure(claimed)).rejects.toThrow(/holds 333333333333/)
    expect(b.catalog.get(real)).toBeUndefined()

    await a.share.publish(template, 'team-two')
    await a.share.forget({ name: 'team-two', id: real })
    const c = replica('c2')
    await c.share.ensure('team-two')
    expect(() => c.catalog.resolve('team-two')).toThrow(NotFoundError)

    // One replica (SQLite): nothing to share.
    expect(await replica('alone', false).share.publish(template, 'team')).toBe(0)
  })

  it('a removal reaches the replicas that hold a copy at their next lookup, by name and by id; a build after it is kept and shared', async () => {
    const a = replica('a3')
    const b = replica('b3')
    const [named, other] = ['5'.repeat(64), '6'.repeat(64)]
    await a.share.publish(hostTemplate(a.home, named, 'five', 'gone', minutesAgo(2)), 'gone')
    await a.share.publish(hostTemplate(a.home, other, 'six', 'by-id', minutesAgo(2)), 'by-id')
    await b.share.ensure('gone')
    await b.share.ensure(other)
    expect(b.catalog.get(named)?.names).toEqual(['gone'])

    // Removed on A by name, and another by id, as DELETE /api/templates does.
    await a.share.forget(a.catalog.remove('gone'))
    await a.share.forget(a.catalog.remove(other))
    await b.share.ensure('gone')
    expect(() => b.catalog.resolve('gone')).toThrow(NotFoundError)
    expect(b.catalog.get(named)).toBeUndefined()
    await b.share.ensure(other)
    expect(b.catalog.get(other)).toBeUndefined()
    // Nor does a replica that never held it find it, nor one started with it as its pool's template.
    await expect(replica('c3').share.need('gone')).rejects.toThrow(
      /No template "gone" is built here .*, nor in the database the replicas share/,
    )

    // Built again on B after the removal: B keeps it, and its start shares it (the name's record goes).
    // (A second on: the store's clock runs a little ahead of the wall's under many writes.)
    const again = hostTemplate(b.home, named, 'again', 'gone', new Date(Date.now() + 1000).toISOString())
    expect(await b.share.publishLocal()).toMatchObject({ published: ['gone'], dropped: [], failed: [] })
    const c = replica('c3b')
    expect((await c.share.need('gone')).env).toEqual({ BUILT: 'again' })
    expect(again.id).toBe(named)
    // By id too: the build's record of removal went with it.
    expect(await stores.templateFiles.statTemplateFile(`removed:${named}`)).toBeUndefined()

    // Removed through a replica that never held it (DELETE there): out of the database.
    const d = replica('d3')
    expect(await d.share.forgetElsewhere('gone')).toBe(true)
    await expect(replica('e3').share.need('gone')).rejects.toThrow(NotFoundError)
    expect(await d.share.forgetElsewhere('gone')).toBe(false)
  })

  it("serve's start shares this home's named templates the database lacks or holds older; a newer one in the database, or a later removal, wins", async () => {
    const a = replica('a4')
    const b = replica('b4')
    const ids = ['7', '8', '9', 'a', 'b'].map((digit) => digit.repeat(64))
    const [fresh, stale, newer, removedLater, same] = ids as [string, string, string, string, string]
    // Built here long ago (a CLI build before the database): the database's newer build wins.
    hostTemplate(b.home, stale, 'stale', 'shared-newer', minutesAgo(60))
    await a.share.publish(hostTemplate(a.home, newer, 'newer', 'shared-newer'), 'shared-newer')
    // Built here, then removed elsewhere: dropped here, not shared again.
    hostTemplate(b.home, removedLater, 'old', 'removed-later', minutesAgo(60))
    await a.share.publish(
      hostTemplate(a.home, removedLater, 'old', 'removed-later', minutesAgo(60)),
      'removed-later',
    )
    await a.share.forget(a.catalog.remove('removed-later'))
    // In the database already as this build.
    const both = hostTemplate(b.home, same, 'same', 'same-build')
    await a.share.publish(both, 'same-build')
    // The database lacks it: shared.
    hostTemplate(b.home, fresh, 'fresh', 'only-here')

    const result = await b.share.publishLocal()
    expect({ ...result, kept: result.kept.sort() }).toEqual({
      published: ['only-here'],
      kept: ['same-build', 'shared-newer'],
      dropped: ['removed-later'],
      failed: [],
    })
    expect(b.catalog.get(removedLater)).toBeUndefined()
    expect((await stores.templateFiles.namedTemplateFile('shared-newer'))?.key).toBe(`template:${newer}`)
    const c = replica('c4')
    expect((await c.share.need('only-here')).env).toEqual({ BUILT: 'fresh' })
    // Started again, nothing is done twice.
    expect((await b.share.publishLocal()).published).toEqual([])
  })

  it("the newest build wins on the database's clock: a database an hour ahead does not make an older removal newer", async () => {
    const hour = 3600_000
    const a = replica('a5', true, { files: clockAhead(hour) })
    const b = replica('b5', true, { files: clockAhead(hour) })
    const [removed, rebuilt] = ['c'.repeat(64), 'd'.repeat(64)]
    await a.share.publish(hostTemplate(a.home, removed, 'old', 'skewed', minutesAgo(30)), 'skewed')
    await a.share.forget(a.catalog.remove('skewed'))
    // Built on B after the removal by the hosts' clocks, though before it by the database's figures.
    hostTemplate(b.home, rebuilt, 'new', 'skewed', new Date(Date.now() + 1000).toISOString())
    await b.share.ensure('skewed')
    expect(b.catalog.resolve('skewed').id).toBe(rebuilt)
    expect(await b.share.publishLocal()).toMatchObject({ published: ['skewed'], dropped: [] })
    expect((await stores.templateFiles.namedTemplateFile('skewed'))?.key).toBe(`template:${rebuilt}`)
  })

  it("removals' records go after keepRemovalsMs (a month by default), at the next removal or start", async () => {
    const files = stores.templateFiles
    const a = replica('a6')
    await a.share.forget({ name: 'removed-long-ago', id: 'e'.repeat(64) })
    const records = await Promise.all(
      ['removed:removed-long-ago', `removed:${'e'.repeat(64)}`].map(
        async (key) => (await files.statTemplateFile(key)) as StoredTemplateFile,
      ),
    )
    // The two records' stamps may differ by a few ms on a busy machine: wait past the later one.
    const last = Math.max(...records.map((record) => Date.parse(record.createdAt)))
    expect(await a.share.tidy()).toEqual({ partial: 0, removals: 0 })
    // A replica that keeps them a moment, once the database's clock is past it: its next removal forgets them.
    const brief = replica('a6-brief', true, { keepRemovalsMs: 1 })
    await expect.poll(async () => (await files.databaseTimeMs()) - last).toBeGreaterThan(1)
    await brief.share.forget({ name: 'removed-later' })
    expect(await files.statTemplateFile('removed:removed-long-ago')).toBeUndefined()
    expect(await files.statTemplateFile(`removed:${'e'.repeat(64)}`)).toBeUndefined()
    expect(await files.statTemplateFile('removed:removed-later')).toBeDefined()
    // And its start.
    await expect.poll(async () => (await brief.share.tidy()).removals).toBe(1)
    expect(await files.statTemplateFile('removed:removed-later')).toBeUndefined()
  })
})
