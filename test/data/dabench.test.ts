// Every DABench table: the profile's column names, dtypes and row count equal what pandas reads with
// the profile's own readCall, computed here by the real pandas.
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { profileFiles } from '../../src/data/index.js'
import { onHost, pandasViews } from './pandas-truth.js'

const TABLES = join(import.meta.dirname, '../../../shared/datasets/dabench/tables')

describe('DABench tables', () => {
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
})
