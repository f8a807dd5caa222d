/** `analyst profile` end to end: the built command on files on disk; exit codes and JSON shape. */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const BIN = resolve('dist/cli/bin.js')
let dir: string

function analyst(args: string[]) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
    timeout: 60_000,
  })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-profile-cli-'))
  writeFileSync(join(dir, 'sales.csv'), 'region;amount\nNorth;1,5\nSouth;2,25\n')
  writeFileSync(join(dir, 'regions.csv'), 'region,manager\nNorth,Ann\nSouth,Bob\n')
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('analyst profile', () => {
  it('prints the prompt text and exits 0 when every file was profiled', () => {
    const { code, stdout, stderr } = analyst(['profile', 'sales.csv', 'regions.csv'])
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toContain("sales = pd.read_csv('data/sales.csv', sep=';', decimal=',')")
    expect(stdout).toContain("- 'amount' float64: 1.5 … 2.25")
    expect(stdout).toContain("- sales.csv, regions.csv: 'region' object")
  })

  it('prints one JSON array with an object per file', () => {
    const { code, stdout } = analyst(['profile', 'sales.csv', 'regions.csv', '--json'])
    expect(code).toBe(0)
    const profiles = JSON.parse(stdout) as Record<string, unknown>[]
    expect(profiles.map((p) => [p.path, p.format, p.rows])).toEqual([
      ['sales.csv', 'csv', 2],
      ['regions.csv', 'csv', 2],
    ])
    const [sales] = profiles as { columns: Record<string, unknown>[]; warnings: string[] }[]
    expect(sales?.columns.map((c) => [c.name, c.dtype, c.nulls])).toEqual([
      ['region', 'object', 0],
      ['amount', 'float64', 0],
    ])
    expect(Array.isArray(sales?.warnings)).toBe(true)
  })

  it('exits 2 when a file could not be profiled, saying why, without a stack trace', () => {
    const { code, stdout, stderr } = analyst(['profile', 'sales.csv', 'missing.csv'])
    expect(code).toBe(2)
    expect(stdout).toContain(
      '## data/missing.csv — could not be profiled\nNo such file: missing.csv. Check the path.',
    )
    expect(stderr).not.toMatch(/at .*\.js:\d+/)
    const json = analyst(['profile', 'missing.csv', '--json'])
    expect(json.code).toBe(2)
    expect((JSON.parse(json.stdout) as { error: string }[])[0]?.error).toMatch(/No such file/)
  })

  it('samples a file bigger than the full-read limit and counts its rows exactly (in a worker thread)', () => {
    const rows = 600_000
    const lines = ['id,label,value']
    for (let i = 0; i < rows; i++)
      lines.push(
        i % 1000 === 0 ? `${i},"multi\nline, quoted",${i / 4}` : `${i},plain text number ${i % 97},${i / 4}`,
      )
    writeFileSync(join(dir, 'big.csv'), `${lines.join('\n')}\n`)
    const { code, stdout } = analyst(['profile', 'big.csv', '--json'])
    expect(code).toBe(0)
    const [profile] = JSON.parse(stdout) as {
      rows: number
      rowsEstimated?: boolean
      sampled?: boolean
      bytes: number
    }[]
    expect(profile?.bytes).toBeGreaterThan(16 * 1024 * 1024)
    expect(profile?.sampled).toBe(true)
    expect(profile?.rowsEstimated).toBeUndefined()
    expect(profile?.rows).toBe(rows)
  })

  it('rejects a bad option with a usage message', () => {
    const { code, stderr } = analyst(['profile', 'sales.csv', '--tokens', 'many'])
    expect(code).toBe(2)
    expect(stderr).toMatch(/whole number of tokens/)
  })
})
