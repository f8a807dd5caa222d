/** `analyst run` end to end: the built command, a real sandbox, files on disk. */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const BIN = resolve('dist/cli/bin.js')

function analyst(args: string[], options: { cwd: string; input?: string }) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    cwd: options.cwd,
    input: options.input,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
    timeout: 120_000,
  })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

describe('analyst run', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'analyst-run-'))
    writeFileSync(join(dir, 'prices.csv'), 'item,price\napple,1.5\npear,2.5\n')
    writeFileSync(
      join(dir, 'load.py'),
      "import pandas as pd\nprices = pd.read_csv('data/prices.csv')\nprint('loaded', len(prices))\n",
    )
    writeFileSync(
      join(dir, 'chart.py'),
      "import matplotlib.pyplot as plt\nprices.plot.bar(x='item', y='price')\nplt.savefig('bars.png')\nprices.price.mean()\n",
    )
    writeFileSync(join(dir, 'fails.py'), "print('about to fail')\nprices['missing']\n")
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('runs files in order in one sandbox, shows output, saves images and files', () => {
    const { code, stdout, stderr } = analyst(
      ['run', 'load.py', 'chart.py', '--data', 'prices.csv', '--output-dir', 'out'],
      { cwd: dir },
    )
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toContain('loaded 2\n')
    expect(stdout).toContain('Out: 2.0')
    const image = stdout.match(/\[image saved: (.+)\]/)?.[1]
    expect(image && readFileSync(image).subarray(1, 4).toString()).toBe('PNG')
    expect(readFileSync(join(dir, 'out/files/bars.png')).subarray(1, 4).toString()).toBe('PNG')
  })

  it('with --json prints one JSON object per cell and nothing else', () => {
    const { code, stdout } = analyst(
      ['run', 'load.py', 'chart.py', '--data', 'prices.csv', '--json', '--output-dir', 'json-out'],
      {
        cwd: dir,
      },
    )
    expect(code).toBe(0)
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(lines.map((line) => line.file)).toEqual(['load.py', 'chart.py'])
    expect(lines[0].logs.stdout).toEqual(['loaded 2\n'])
    expect(lines[1].results.find((r: { isMainResult: boolean }) => r.isMainResult).text).toBe('2.0')
    expect(lines[1].artifacts[0]).toMatchObject({ name: 'bars.png', mimeType: 'image/png' })
    expect(existsSync(lines[1].artifacts[0].savedPath)).toBe(true)
  })

  it('exits 1 when a cell raises, shows the traceback, and still runs the cells after it', () => {
    const { code, stdout, stderr } = analyst(['run', 'load.py', 'fails.py', '-', '--data', 'prices.csv'], {
      cwd: dir,
      input: "print('still running', len(prices))",
    })
    expect(code).toBe(1)
    expect(stdout).toContain('about to fail')
    expect(stderr).toContain("KeyError: 'missing'")
    expect(stdout).toContain('still running 2')
  })

  it('exits 2 with a clear message and no stack trace for a missing file', () => {
    const missing = analyst(['run', 'nope.py'], { cwd: dir })
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('No such file: nope.py')
    expect(missing.stderr).not.toMatch(/\n\s+at /)
    const badData = analyst(['run', 'load.py', '--data', 'nope.csv'], { cwd: dir })
    expect(badData.code).toBe(2)
    expect(badData.stderr).toContain('No such data file: nope.csv')
  })
})
