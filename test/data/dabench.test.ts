// Every DABench table: the profile's column names, dtypes and row count equal what pandas reads with
// the profile's own readCall, computed here by the real pandas.
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { profileFiles } from '../../src/data/index.js'
import { DABENCH, DABENCH_MISSING } from '../support/dabench.js'
import { onHost, pandasViews } from './pandas-truth.js'

const TABLES = join(DABENCH ?? '', 'tables')

describe.skipIf(!DABENCH)(`DABench tables${DABENCH ? '' : ` (${DABENCH_MISSING})`}`, () => {
  it('profiles every table exactly as pandas reads it', async () => {
    const files = readdirSync(TABLES)
      .filter((f) => f.endsWith('.csv'))
      .sort()
    expect(files.length).toBeGreaterThanOrEqual(50)
    const profiles = await profileFiles(files.map((f) => join(TABLES, f)))
    const truth = pandasViews(profiles.map((p) => ({ key: p.name, call: onHost(p.readCall, TABLES) })))
    const mismatches: string[] = []
    for (const profile of profiles) {
      expect(profile.error, profile.name).toBeUndefined()
      const view = truth[profile.name]
      const mine = {
        columns: profile.columns.map((c) => c.name),
        dtypes: profile.columns.map((c) => c.dtype),
        rows: profile.rows,
      }
      const theirs = { columns: view?.columns, dtypes: view?.dtypes, rows: view?.rows }
      if (JSON.stringify(mine) !== JSON.stringify(theirs))
        mismatches.push(
          `${profile.name}: ${JSON.stringify({ mine, theirs, error: view?.error }).slice(0, 600)}`,
        )
    }
    expect(mismatches).toEqual([])
  })

  it('samples the bigger tables faithfully: same names, read calls pandas accepts, dtypes never wider than pandas gives', async () => {
    // Tiny limits force the sampling path on tables of a few hundred KB.
    const limits = {
      fullReadBytes: 32 * 1024,
      headBytes: 16 * 1024,
      pieces: 8,
      pieceBytes: 2048,
      exactCountBytes: 1,
    }
    const files = readdirSync(TABLES).filter(
      (f) => f.endsWith('.csv') && statSync(join(TABLES, f)).size > 64 * 1024,
    )
    expect(files.length).toBeGreaterThanOrEqual(10)
    const profiles = await profileFiles(
      files.map((f) => join(TABLES, f)),
      { limits },
    )
    const truth = pandasViews(profiles.map((p) => ({ key: p.name, call: onHost(p.readCall, TABLES) })))
    // A sample sees a subset of the values, so it can only miss what widens a dtype.
    const rank: Record<string, number> = { bool: 0, int64: 1, float64: 2, object: 3 }
    for (const profile of profiles) {
      expect(profile.sampled, profile.name).toBe(true)
      const view = truth[profile.name]
      expect(view?.error, profile.name).toBeUndefined()
      expect(profile.columns.map((c) => c.name)).toEqual(view?.columns)
      profile.columns.forEach((column, i) => {
        const theirs = view?.dtypes[i] as string
        if (column.dtype !== theirs) {
          expect(rank[column.dtype] ?? 9, `${profile.name} ${column.name}`).toBeLessThan(rank[theirs] ?? 9)
          if (column.dtype === 'bool') expect(theirs).toBe('object')
        }
      })
    }
  })
})
