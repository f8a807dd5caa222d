// Bad input: each file gets a clear message or a profile with warnings; never a throw, a stack
// trace or a hang. The text form stays within its budget whatever the file holds.
import { execFileSync } from 'node:child_process'
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { estimateTokens, formatProfiles, profileFiles } from '../../src/data/index.js'
import { pandasViews } from './pandas-truth.js'

let dir: string
const path = (name: string) => join(dir, name)

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-bad-input-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('files that cannot be profiled say why', () => {
  it('an empty file', async () => {
    writeFileSync(path('empty.csv'), '')
    const [profile] = await profileFiles([path('empty.csv')])
    expect(profile?.error).toMatch(/empty/)
    expect(profile?.columns).toEqual([])
  })

  it('a file of blank lines', async () => {
    writeFileSync(path('blank.csv'), '\n\n  \n\n')
    const [profile] = await profileFiles([path('blank.csv')])
    expect(profile?.error).toMatch(/EmptyDataError/)
  })

  it('a binary file named .csv', async () => {
    const png = Buffer.from([
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52,
    ])
    writeFileSync(path('picture.csv'), Buffer.concat([png, Buffer.alloc(2000, 7)]))
    const [profile] = await profileFiles([path('picture.csv')])
    expect(profile?.error).toMatch(/binary file, not CSV/)
  })

  it('a path that does not exist, a folder, a pipe', async () => {
    mkdirSync(path('folder'))
    execFileSync('mkfifo', [path('pipe.csv')])
    const profiles = await profileFiles([path('missing.csv'), path('folder'), path('pipe.csv')])
    expect(profiles.map((p) => p.error)).toEqual([
      `No such file: ${path('missing.csv')}. Check the path.`,
      `${path('folder')} is a folder, not a file. Give the data files inside it.`,
      `${path('pipe.csv')} is not a regular file (a pipe or device). Give a data file.`,
    ])
  })

  it('a file named .parquet or .xlsx that is not one', async () => {
    writeFileSync(path('fake.parquet'), 'a,b\n1,2\n')
    writeFileSync(path('fake.xlsx'), 'a,b\n1,2\n')
    const profiles = await profileFiles([path('fake.parquet'), path('fake.xlsx')])
    for (const profile of profiles) expect(profile.error).toMatch(/named like .* but its content is not/)
  })
})

describe('odd files still get a profile, within the budget', () => {
  it('a 1 MB single line', async () => {
    writeFileSync(path('one-line.csv'), 'x'.repeat(1024 * 1024))
    const [profile] = await profileFiles([path('one-line.csv')])
    expect(profile?.error).toBeUndefined()
    expect(profile?.rows).toBe(0)
    expect(profile?.columns).toHaveLength(1)
    const text = formatProfiles(profile ? [profile] : [])
    expect(estimateTokens(text)).toBeLessThanOrEqual(1500)
  })

  it('a 1 MB single line of fields (a header of 200,000 columns)', async () => {
    writeFileSync(path('wide-line.csv'), Array.from({ length: 200_000 }, (_, i) => `c${i}`).join(','))
    const [profile] = await profileFiles([path('wide-line.csv')])
    expect(profile?.columns).toHaveLength(200_000)
    const text = formatProfiles(profile ? [profile] : [])
    expect(estimateTokens(text)).toBeLessThanOrEqual(1500)
    expect(text).toMatch(/200,000 columns/)
  })

  it('10,000 columns: names, dtypes and rows as pandas reads them; the prompt summarizes', async () => {
    const header = Array.from({ length: 10_000 }, (_, i) => (i % 2 ? `x${i}` : `label_${i}`)).join(',')
    const rows = Array.from({ length: 20 }, (_, r) =>
      Array.from({ length: 10_000 }, (_, i) => (i % 2 ? r * i : `t${r}`)).join(','),
    )
    writeFileSync(path('wide.csv'), `${header}\n${rows.join('\n')}\n`)
    const [profile] = await profileFiles([path('wide.csv')])
    const view = pandasViews([{ key: 'wide', call: `pd.read_csv(${JSON.stringify(path('wide.csv'))})` }]).wide
    expect(profile?.columns.map((c) => c.name)).toEqual(view?.columns)
    expect(profile?.columns.map((c) => c.dtype)).toEqual(view?.dtypes)
    expect(profile?.rows).toBe(view?.rows)
    const text = formatProfiles(profile ? [profile] : [], { tokensPerFile: 1500 })
    expect(estimateTokens(text)).toBeLessThanOrEqual(1500)
    expect(text).toMatch(/10,000 columns/)
    expect(text).toMatch(/5,000 int64/) // the summary by dtype of the columns not listed
    // Never cut mid-line: every line is whole (column lines start with '- ', the last is complete).
    expect(text.split('\n').every((line) => !line.endsWith(','))).toBe(true)
  }, 120_000) // CPU-bound (6 s on a quiet machine, 37 s seen under load): a budget for its work

  it('a file that changes while it is read', async () => {
    const file = path('growing.csv')
    let text = 'id,value\n'
    for (let i = 0; i < 200_000; i++) text += `${i},${i * 2}\n`
    writeFileSync(file, text)
    const profiling = profileFiles([file], {
      limits: { fullReadBytes: 64 * 1024, headBytes: 32 * 1024, pieceBytes: 4096 },
    })
    appendFileSync(file, 'oops,"unfinished\n'.repeat(1000))
    const [profile] = await profiling
    expect(profile?.error).toBeUndefined()
    expect(profile?.columns.map((c) => c.name)).toEqual(['id', 'value'])
    if (!profile?.warnings.some((w) => /changed while it was being read/.test(w))) {
      // The append landed before the read: the profile describes the longer file.
      expect(profile?.rows).toBeGreaterThanOrEqual(200_000)
    }
  })

  it('warns when two files would have the same name in the sandbox', async () => {
    mkdirSync(path('other'))
    writeFileSync(path('same.csv'), 'a\n1\n')
    writeFileSync(path('other/same.csv'), 'b\n2\n')
    const profiles = await profileFiles([path('same.csv'), path('other/same.csv')])
    for (const profile of profiles) expect(profile.warnings.join('\n')).toMatch(/also named same\.csv/)
  })

  it('stops when the caller aborts, with the abort reason', async () => {
    writeFileSync(path('fine.csv'), 'a\n1\n')
    const controller = new AbortController()
    controller.abort(new Error('user cancelled'))
    await expect(profileFiles([path('fine.csv')], { signal: controller.signal })).rejects.toThrow(
      'user cancelled',
    )
  })

  it('profiles the good files when others in the same call are bad', async () => {
    writeFileSync(path('good.csv'), 'a,b\n1,2\n')
    const profiles = await profileFiles([path('missing.csv'), path('good.csv')])
    expect(profiles[0]?.error).toBeDefined()
    expect(profiles[1]?.error).toBeUndefined()
    expect(profiles[1]?.rows).toBe(1)
    const text = formatProfiles(profiles)
    expect(text).toMatch(/data\/missing\.csv — could not be profiled\nNo such file/)
    expect(text).toMatch(/data\/good\.csv \(CSV\) — 1 rows × 2 columns/)
  })
})
