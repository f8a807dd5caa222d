import { createReadStream, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NotFoundError } from '../errors.js'
import { openStores, type Stores } from '../store/index.js'
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

/** A replica: its own home, the one store. */
function replica(name: string, shared = true) {
  const home = join(work, name)
  const catalog = openTemplates(home)
  return { home, catalog, share: new TemplateShare({ home, catalog, files: stores.templateFiles, shared }) }
}

/** A template over the host with an env only (its export is a few KiB). */
const hostTemplate = (home: string, id: string, value: string) =>
  commitTemplate(home, id, {
    name: 'team',
    manifest: { base: { kind: 'host' }, hasRootfs: false, env: { BUILT: value } },
  })

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
})
