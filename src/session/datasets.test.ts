/**
 * Data files handed to sandboxes from a blob store that keeps no files (blobs in the database):
 * one copy in the cache folder, even when many sessions open at once with the same data.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { SqlBlobStore } from '../store/sql/blobs.js'
import { SqliteHistoryStore } from '../store/sqlite/store.js'
import { materialize } from './datasets.js'

let home: string | undefined
afterEach(() => {
  if (home) rmSync(home, { recursive: true, force: true })
})

describe('materialize', () => {
  it('copies a blob into the cache once when many ask at once, and reuses the copy', async () => {
    home = mkdtempSync(join(tmpdir(), 'analyst-materialize-'))
    const history = await SqliteHistoryStore.open(join(home, 'analyst.db'))
    try {
      const blobs = new SqlBlobStore(history.db, history.runtime)
      const content = Buffer.from('region,value\nNorth,1\n'.repeat(20_000))
      const { sha256 } = await blobs.put(content)
      const cache = join(home, 'cache')
      const paths = await Promise.all(Array.from({ length: 20 }, () => materialize(blobs, sha256, cache)))
      expect(new Set(paths)).toEqual(new Set([join(cache, sha256)]))
      expect(readFileSync(join(cache, sha256)).equals(content)).toBe(true)
      expect(readdirSync(cache)).toEqual([sha256]) // no part left behind
      expect(await materialize(blobs, sha256, cache)).toBe(join(cache, sha256))
      expect(await materialize(blobs, '0'.repeat(64), cache)).toBeUndefined()
    } finally {
      await history.close()
    }
  })
})
