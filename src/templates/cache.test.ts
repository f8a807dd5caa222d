import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest'
import { commitTemplate } from '../test/support/templates.js'
import { CACHE_RECORD, pruneAfterBuild, pruneTemplates, templateCacheDir } from './cache.js'
import { openTemplates } from './store.js'

let home: string
let cache: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'analyst-template-cache-'))
  cache = templateCacheDir(home, {})
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

/** A cache entry of `kib` KiB. */
function entry(name: string, kib = 64) {
  mkdirSync(join(cache, name, 'rootfs'), { recursive: true })
  writeFileSync(join(cache, name, 'rootfs', 'file'), Buffer.alloc(kib * 1024, 1))
}

/** A built template (a trixie root) that came from `entries` (undefined: built before they were recorded). */
function template(id: string, name: string | undefined, entries: string[] | undefined) {
  commitTemplate(home, id, {
    ...(name ? { name } : {}),
    fill: (folder) => {
      writeFileSync(join(folder, 'rootfs', 'file'), Buffer.alloc(32 * 1024, 1))
      if (entries) writeFileSync(join(folder, CACHE_RECORD), JSON.stringify({ entries }))
    },
  })
}

describe('template cache pruning', () => {
  it('removes the entries no built template came from, and says how much that freed', () => {
    entry('debian-trixie-aaaa')
    entry('layer-used')
    entry('layer-orphan', 128)
    entry('debian-bookworm-bbbb')
    template('1'.repeat(64), 'team', ['debian-trixie-aaaa', 'layer-used'])
    const result = pruneTemplates({ home })
    expect(result.entries.map((e) => e.name).sort()).toEqual(['debian-bookworm-bbbb', 'layer-orphan'])
    expect(result.freedBytes).toBeGreaterThanOrEqual(192 * 1024)
    expect(existsSync(join(cache, 'layer-used'))).toBe(true)
    expect(existsSync(join(cache, 'layer-orphan'))).toBe(false)
    expect(pruneTemplates({ home }).entries).toEqual([])
  })

  it("keeps the suite's root for a template built before entries were recorded, and builds under way (their roots and locks)", () => {
    entry('debian-trixie-aaaa')
    entry('layer-x')
    entry('.partial-abc')
    entry('.partial-old')
    entry('debian-bookworm-bbbb.lock')
    const old = new Date(Date.now() - 2 * 24 * 3600_000)
    utimesSync(join(cache, '.partial-old'), old, old)
    template('2'.repeat(64), 'legacy', undefined)
    expect(
      pruneTemplates({ home })
        .entries.map((e) => e.name)
        .sort(),
    ).toEqual(['.partial-old', 'layer-x'])
    expect(existsSync(join(cache, 'debian-trixie-aaaa'))).toBe(true)
    expect(existsSync(join(cache, '.partial-abc'))).toBe(true)
    expect(existsSync(join(cache, 'debian-bookworm-bbbb.lock'))).toBe(true)
  })

  it('with all, removes unnamed templates first, then what only they came from', () => {
    entry('layer-named')
    entry('layer-unnamed')
    template('3'.repeat(64), 'kept', ['layer-named'])
    template('4'.repeat(64), undefined, ['layer-unnamed'])
    expect(pruneTemplates({ home }).entries).toEqual([])
    const result = pruneTemplates({ home, all: true })
    expect(result.templates.map((t) => t.id)).toEqual(['4'.repeat(64)])
    expect(result.entries.map((e) => e.name)).toEqual(['layer-unnamed'])
    expect(
      openTemplates(home)
        .list()
        .map((t) => t.names),
    ).toEqual([['kept']])
  })

  it('prunes after a build only once its own cache is past ANALYST_TEMPLATE_CACHE_MB, never a shared one', async () => {
    entry('layer-orphan', 1024)
    template('5'.repeat(64), 'team', [])
    const lines: string[] = []
    const onLog = (line: string) => lines.push(line)
    expect(
      await pruneAfterBuild({ home, env: { ANALYST_TEMPLATE_CACHE_MB: '10' }, cacheDir: cache, onLog }),
    ).toBeUndefined()
    expect(existsSync(join(cache, 'layer-orphan'))).toBe(true)
    // A cache that ANALYST_TEMPLATE_CACHE names may hold other homes' roots: left alone.
    const elsewhere = mkdtempSync(join(tmpdir(), 'analyst-template-cache-other-'))
    onTestFinished(() => rmSync(elsewhere, { recursive: true, force: true }))
    const shared = { ANALYST_TEMPLATE_CACHE: cache, ANALYST_TEMPLATE_CACHE_MB: '0.5' }
    expect(await pruneAfterBuild({ home: elsewhere, env: shared, cacheDir: cache, onLog })).toBeUndefined()
    expect(existsSync(join(cache, 'layer-orphan'))).toBe(true)
    const pruned = await pruneAfterBuild({
      home,
      env: { ANALYST_TEMPLATE_CACHE_MB: '0.5' },
      cacheDir: cache,
      onLog,
    })
    expect(pruned?.entries.map((e) => e.name)).toEqual(['layer-orphan'])
    expect(lines).toEqual([
      expect.stringMatching(/over ANALYST_TEMPLATE_CACHE_MB \(1\): 1 unused entries removed/),
    ])
  })
})
