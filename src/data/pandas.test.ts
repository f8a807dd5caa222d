import { describe, expect, it } from 'vitest'
import { profileWithPandas } from './pandas.js'

describe('profileWithPandas', () => {
  it('profiles JSON with nested values, mixed types and dates, as pandas reads it', async () => {
    const records = [
      { id: 1, tags: ['a', 'b'], meta: { k: 1 }, code: 7, created_at: '2024-01-02T03:04:05' },
      { id: 2, tags: [], meta: null, code: 'x7', created_at: '2024-02-03T00:00:00' },
    ]
    const [result] = await profileWithPandas([{ kind: 'json', text: JSON.stringify(records) }])
    expect(result?.error).toBeUndefined()
    expect(result?.rows).toBe(2)
    const byName = Object.fromEntries((result?.columns ?? []).map((c) => [c.name, c]))
    expect(byName.tags?.dtype).toBe('object')
    expect(byName.meta?.nulls).toBe(1)
    // pandas converts columns named like dates (created_at) on its own.
    expect(byName.created_at?.dtype).toBe('datetime64[ns]')
    expect(result?.warnings?.join('\n')).toMatch(/'code' mixes numbers \(1\) and text \(1/)
  })

  it('returns an error per job that pandas cannot read, and still reads the others', async () => {
    const results = await profileWithPandas([
      { kind: 'json', text: '{"a": [1, 2' },
      { kind: 'ndjson', text: '{"a": 1}\n{"a": 2}\n' },
    ])
    expect(results[0]?.error).toMatch(/ValueError/)
    expect(results[1]?.rows).toBe(2)
  })

  it('stops pandas when it takes too long, with a message', async () => {
    const [result] = await profileWithPandas([{ kind: 'ndjson', text: '{"a": 1}\n' }], undefined, 1)
    expect(result?.error).toMatch(/^pandas took longer than 0.001 s to read the file and was stopped/)
  })
})
