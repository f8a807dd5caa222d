/**
 * `analyst check` and `analyst run --guard`: argv parsing, the command in-process on real files, and
 * the built command end to end (exit codes, --json), with a real sandbox for `run --guard`.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { PassThrough } from 'node:stream'
import { text } from 'node:stream/consumers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { main } from '../../src/cli/cli.js'
import { check } from '../../src/cli/commands/check.js'
import { UsageError } from '../../src/cli/errors.js'

const BIN = resolve('dist/cli/bin.js')

function analyst(args: string[], cwd: string, input?: string) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    input,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
    timeout: 120_000,
  })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

async function checkInProcess(
  files: string[],
  cwd: string,
  extra: Partial<Parameters<typeof check>[0]> = {},
) {
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  const code = await check({
    files,
    json: false,
    allowModules: [],
    allowNetwork: false,
    cwd,
    stdout,
    stderr,
    ...extra,
  })
  stdout.end()
  stderr.end()
  return { code, stdout: await text(stdout), stderr: await text(stderr) }
}

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-guard-'))
  writeFileSync(
    join(dir, 'clean.py'),
    "import pandas as pd\ndf = pd.read_csv('data/prices.csv')\nprint(len(df))\n",
  )
  writeFileSync(join(dir, 'net.py'), "import pandas as pd\nimport requests\nopen('/etc/passwd')\n")
  writeFileSync(join(dir, 'marker.py'), "open('ran.txt', 'w').write('yes')\nimport subprocess\n")
  writeFileSync(join(dir, 'prices.csv'), 'item,price\napple,1.5\npear,2.5\n')
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('analyst check: argv', () => {
  async function parse(argv: string[]) {
    const calls: Array<[string, unknown]> = []
    const code = await main(argv, async (name, options) => {
      calls.push([name, options])
      return 5
    })
    return { code, calls }
  }

  it('normalizes the options', async () => {
    const { code, calls } = await parse([
      'check',
      'a.py',
      'b.py',
      '--json',
      '--allow-module',
      'subprocess',
      '--allow-module',
      'os.system',
      '--allow-network',
    ])
    expect(code).toBe(5)
    expect(calls).toEqual([
      [
        'check',
        {
          files: ['a.py', 'b.py'],
          json: true,
          allowModules: ['subprocess', 'os.system'],
          allowNetwork: true,
          cwd: process.cwd(),
        },
      ],
    ])
  })

  it('defaults', async () => {
    const { calls } = await parse(['check', 'a.py'])
    expect(calls[0]?.[1]).toMatchObject({ json: false, allowModules: [], allowNetwork: false })
  })

  it('needs a file', async () => {
    await expect(parse(['check'])).rejects.toThrow(UsageError)
  })

  it('run --guard', async () => {
    expect((await parse(['run', 'a.py', '--guard'])).calls[0]?.[1]).toMatchObject({ guard: true })
    expect((await parse(['run', 'a.py'])).calls[0]?.[1]).toMatchObject({ guard: false })
  })
})

describe('analyst check: the command', () => {
  it('exit 0 and no output on stdout for clean files', async () => {
    const { code, stdout, stderr } = await checkInProcess(['clean.py'], dir)
    expect(code).toBe(0)
    expect(stdout).toBe('')
    expect(stderr).toContain('no violations')
  })

  it('exit 1 with file:line:column, rule and message for each violation', async () => {
    const { code, stdout } = await checkInProcess(['clean.py', 'net.py'], dir)
    expect(code).toBe(1)
    const lines = stdout.trim().split('\n')
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(/^net\.py:2:8 {2}network {2}import requests: network is off in the sandbox/)
    expect(lines[1]).toMatch(/^net\.py:3:6 {2}path {2}'\/etc\/passwd' is outside the workspace/)
  })

  it('--json prints one array, one object per file', async () => {
    const { code, stdout, stderr } = await checkInProcess(['clean.py', 'net.py'], dir, { json: true })
    expect(code).toBe(1)
    expect(stderr).toBe('')
    const reports = JSON.parse(stdout) as Array<{ file: string; violations: Array<Record<string, unknown>> }>
    expect(reports.map((report) => report.file)).toEqual(['clean.py', 'net.py'])
    expect(reports[0]?.violations).toEqual([])
    expect(reports[1]?.violations.map((v) => Object.keys(v).sort())).toEqual([
      ['column', 'line', 'message', 'rule'],
      ['column', 'line', 'message', 'rule'],
    ])
    expect(reports[1]?.violations.map((v) => v.rule)).toEqual(['network', 'path'])
  })

  it('policy flags reach the guard', async () => {
    const { stdout } = await checkInProcess(['net.py'], dir, { json: true, allowNetwork: true })
    const [report] = JSON.parse(stdout) as Array<{ violations: Array<{ rule: string }> }>
    expect(report?.violations.map((v) => v.rule)).toEqual(['path'])
  })

  it('reads code from stdin with -', async () => {
    const stdin = new PassThrough()
    stdin.end('import socket\n')
    const { code, stdout } = await checkInProcess(['-'], dir, { stdin })
    expect(code).toBe(1)
    expect(stdout).toMatch(/^-:1:8 {2}network {2}import socket/)
  })

  it('a missing file or a directory is a usage error, before any output', async () => {
    await expect(checkInProcess(['clean.py', 'nope.py'], dir)).rejects.toThrow('No such file: nope.py')
    await expect(checkInProcess(['.'], dir)).rejects.toThrow('. is a directory')
  })
})

describe.skipIf(!existsSync(BIN))('the built command', () => {
  it('analyst check: exit codes 0, 1 and 2', () => {
    expect(analyst(['check', 'clean.py'], dir).code).toBe(0)
    const flagged = analyst(['check', 'net.py', '--json'], dir)
    expect(flagged.code).toBe(1)
    expect(JSON.parse(flagged.stdout)).toHaveLength(1)
    const missing = analyst(['check', 'missing.py'], dir)
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('No such file: missing.py')
    expect(missing.stderr).not.toContain('at ') // no stack trace
  })

  it('analyst run --guard: a file with violations does not run, the others do, exit 1', () => {
    const result = analyst(
      ['run', 'marker.py', 'clean.py', '--guard', '--data', 'prices.csv', '--output-dir', 'o1'],
      dir,
    )
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/marker\.py:2:8 {2}process {2}import subprocess/)
    expect(result.stderr).toContain('marker.py: not run')
    expect(result.stdout).toContain('2\n') // clean.py ran
    expect(existsSync(join(dir, 'o1', 'files', 'ran.txt'))).toBe(false)
  })

  it('analyst run without --guard runs the same file', () => {
    const result = analyst(['run', 'marker.py', '--output-dir', 'o2'], dir)
    expect(result.stderr).not.toContain('not run')
    expect(existsSync(join(dir, 'o2', 'files', 'ran.txt'))).toBe(true)
  })

  it('analyst run --guard --json prints the violations as the cell object', () => {
    const result = analyst(['run', 'marker.py', '--guard', '--json', '--output-dir', 'o3'], dir)
    expect(result.code).toBe(1)
    const [cell] = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(cell.file).toBe('marker.py')
    expect(cell.violations[0].rule).toBe('process')
  })
})
