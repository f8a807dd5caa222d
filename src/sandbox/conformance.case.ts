/**
 * What every sandbox backend must do, as one suite each backend runs (as Hono's routers share
 * common.case.test.ts): `describeConformance({ name, create, skip })`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CreateOpts, Execution, OutputMessage, Result, Sandbox } from './index.js'

export interface ConformanceOptions {
  name: string
  create: (options?: CreateOpts) => Promise<Sandbox>
  /** Tests a backend cannot pass, each with the reason. */
  skip?: Array<{ reason: string; tests: string[] }>
}

const PNG_MAGIC = 'iVBORw0KGgo' // base64 of the PNG signature

export function describeConformance({ name, create, skip = [] }: ConformanceOptions) {
  const skipped = new Set(skip.flatMap((entry) => entry.tests))
  const test = (title: string, fn: () => Promise<void>, timeout?: number) =>
    (skipped.has(title) ? it.skip : it)(title, fn, timeout)

  describe(`sandbox conformance: ${name}`, () => {
    let sandbox: Sandbox
    beforeAll(async () => {
      sandbox = await create()
    })
    afterAll(async () => {
      await sandbox?.kill()
    })
    const run = (code: string, options?: Parameters<Sandbox['runCode']>[1]): Promise<Execution> =>
      sandbox.runCode(code, options)

    test('keeps variables, imports and functions between cells', async () => {
      await run('import math\nx = 40\ndef twice(v):\n    return 2 * v')
      const execution = await run('twice(x) + math.floor(2.5)')
      expect(execution.error).toBeUndefined()
      expect(execution.text).toBe('82')
    })

    test('counts executions', async () => {
      const first = await run('1')
      const second = await run('2')
      expect(second.executionCount).toBe((first.executionCount ?? 0) + 1)
    })

    test('gives the last expression as the main result, and none after a semicolon or a statement', async () => {
      expect((await run('a = 5\na * 3')).results).toMatchObject([{ isMainResult: true, text: '15' }])
      expect((await run('a * 3;')).results).toEqual([])
      expect((await run('b = a * 3')).results).toEqual([])
      expect((await run('None')).results).toEqual([])
    })

    test('display() adds results that are not the main result', async () => {
      const execution = await run("display('first')\ndisplay(2, 3)\n'last'")
      expect(execution.results.map((r) => [r.text, r.isMainResult])).toEqual([
        ["'first'", false],
        ['2', false],
        ['3', false],
        ["'last'", true],
      ])
    })

    test('streams stdout and stderr line by line while the cell runs', async () => {
      // The cell goes on only once the host has seen its first line (the host then writes a file
      // that the cell waits for), so that line cannot have come with the cell's end.
      const seen: OutputMessage[] = []
      let acknowledged: Promise<unknown> | undefined
      const execution = await run(
        [
          'import os, sys, time',
          "print('one')",
          'sys.stdout.flush()',
          'deadline = time.monotonic() + 30',
          "while not os.path.exists('seen-one') and time.monotonic() < deadline:",
          '    time.sleep(0.02)',
          "os.remove('seen-one') if os.path.exists('seen-one') else print('never acknowledged')",
          "print('two', file=sys.stderr)",
          "print('three\\nfour', end='')",
        ].join('\n'),
        {
          onStdout: (message) => {
            seen.push(message)
            if (message.line === 'one\n') acknowledged = sandbox.files.write('seen-one', '')
          },
          onStderr: (message) => seen.push(message),
        },
      )
      await acknowledged
      expect(seen.map((message) => [message.line, message.error])).toEqual([
        ['one\n', false],
        ['two\n', true],
        ['three\n', false],
        ['four', false],
      ])
      expect(execution.logs).toEqual({ stdout: ['one\n', 'three\n', 'four'], stderr: ['two\n'] })
    })

    test('captures output that bypasses Python (C code, subprocesses)', async () => {
      const execution = await run(
        "import os\nos.write(1, b'raw fd\\n')\nos.system('echo from a shell')\nprint('after')",
      )
      expect(execution.logs.stdout.join('')).toBe('raw fd\nfrom a shell\nafter\n')
    })

    test('reports an exception with name, value and traceback, and goes on', async () => {
      const failed = await run("def f():\n    return {}['missing']\nf()")
      expect(failed.error).toMatchObject({ name: 'KeyError', value: "'missing'" })
      expect(failed.error?.traceback).toContain('line 2, in f')
      expect(failed.error?.traceback).toContain("KeyError: 'missing'")
      expect((await run('1 + 1')).text).toBe('2')
    })

    test('reports a SyntaxError as an error, not a crash', async () => {
      const execution = await run('def broken(:\n  pass')
      expect(execution.error?.name).toBe('SyntaxError')
      expect(execution.error?.traceback).toContain('def broken(:')
      expect((await run('x')).text).toBe('40')
    })

    test('reports SystemExit and KeyboardInterrupt raised by the cell as errors', async () => {
      expect((await run('import sys\nsys.exit(3)')).error).toMatchObject({ name: 'SystemExit', value: '3' })
      expect((await run('raise KeyboardInterrupt')).error?.name).toBe('KeyboardInterrupt')
      expect((await run('x + 1')).text).toBe('41')
    })

    test('calls onResult and onError as they happen', async () => {
      const results: Result[] = []
      const errors: string[] = []
      await run("display('shown')\nraise ValueError('bad')", {
        onResult: (result) => results.push(result),
        onError: (error) => errors.push(error.name),
      })
      expect(results.map((r) => r.text)).toEqual(["'shown'"])
      expect(errors).toEqual(['ValueError'])
    })

    test('gives a DataFrame as text, html and JSON-safe data', async () => {
      const execution = await run(
        "import pandas as pd, numpy as np\ndf = pd.DataFrame({'when': pd.to_datetime(['2024-01-02', None]), 'value': [1.5, np.nan], 'name': ['a', 'b']})\ndf",
      )
      const [result] = execution.results
      expect(result?.text).toContain('2024-01-02')
      expect(result?.html).toContain('<table')
      expect(result?.data?.value).toEqual([1.5, null])
      expect(result?.data?.name).toEqual(['a', 'b'])
      expect(result?.data?.when?.[0]).toMatch(/^2024-01-02T00:00:00/)
      expect(result?.data?.when?.[1]).toBeNull()
      expect(JSON.parse(JSON.stringify(result?.toJSON())).data).toEqual(result?.data)
    })

    test('keeps the labelled index of a grouped Series in data', async () => {
      const execution = await run(
        "pd.DataFrame({'segment': ['a', 'b', 'a'], 'amount': [1, 2, 3]}).groupby('segment')['amount'].mean()",
      )
      expect(execution.results[0]?.data).toEqual({ segment: ['a', 'b'], amount: [2, 2] })
    })

    test('returns a matplotlib figure as PNG on plt.show() and for figures left open', async () => {
      const execution = await run(
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\nprint('between')\nplt.figure()\nplt.bar(['a'], [1]);",
      )
      const images = execution.results.filter((r) => r.png)
      expect(images).toHaveLength(2)
      for (const image of images) {
        expect(image.png?.startsWith(PNG_MAGIC)).toBe(true)
        expect(image.isMainResult).toBe(false)
      }
      expect(execution.logs.stdout).toEqual(['between\n'])
      // Closed after the cell: the next cell starts with no figure.
      expect((await run('len(plt.get_fignums())')).text).toBe('0')
    })

    test('a figure as the last expression comes back once, as a PNG', async () => {
      const execution = await run('fig, ax = plt.subplots()\nax.plot([3, 1])\nfig')
      expect(execution.results.filter((r) => r.png)).toHaveLength(1)
      expect(execution.results[0]?.isMainResult).toBe(true)
    })

    test('sets environment variables for one cell with envs', async () => {
      const execution = await run("import os\nos.environ.get('ANALYST_CELL_VAR')", {
        envs: { ANALYST_CELL_VAR: 'yes' },
      })
      expect(execution.text).toBe("'yes'")
      expect((await run("os.environ.get('ANALYST_CELL_VAR')")).results).toEqual([])
    })

    test('contexts have their own variables', async () => {
      const context = await sandbox.createContext()
      await run('shared = "default"')
      await run('shared = "other"', { context })
      expect((await run('shared')).text).toBe("'default'")
      expect((await run('shared', { context })).text).toBe("'other'")
      expect((await run('x', { context })).error?.name).toBe('NameError')
    })

    test('runs cells one after another when called concurrently', async () => {
      const [a, b, c] = await Promise.all([
        run('import time\ntime.sleep(0.2)\norder = ["a"]'),
        run('order.append("b")'),
        run('order'),
      ])
      expect(a.error).toBeUndefined()
      expect(b.error).toBeUndefined()
      expect(c.text).toBe("['a', 'b']")
    })

    test('writes, reads, lists and removes files in the workspace', async () => {
      await sandbox.files.write('notes/hello.txt', 'héllo\n')
      expect((await run("open('notes/hello.txt', encoding='utf-8').read()")).text).toBe("'héllo\\n'")
      expect(await sandbox.files.read('notes/hello.txt')).toBe('héllo\n')
      expect(await sandbox.files.read('/home/user/notes/hello.txt')).toBe('héllo\n')
      const listed = await sandbox.files.list('notes')
      expect(listed).toEqual([
        { name: 'hello.txt', type: 'file', path: '/home/user/notes/hello.txt', size: 7 },
      ])
      expect(await sandbox.files.exists('notes/hello.txt')).toBe(true)
      await sandbox.files.remove('notes')
      expect(await sandbox.files.exists('notes/hello.txt')).toBe(false)
      await expect(sandbox.files.read('missing.txt')).rejects.toThrow(/no such file/)
    })

    test('reports files a cell creates or changes as artifacts, and only those', async () => {
      const created = await run(
        "import pandas as pd\npd.DataFrame({'a': [1]}).to_csv('out.csv', index=False)",
      )
      expect(created.artifacts).toEqual([
        { name: 'out.csv', path: '/home/user/out.csv', size: 4, mimeType: 'text/csv' },
      ])
      expect((await run('1')).artifacts).toEqual([])
      const changed = await run(
        "import os\nos.makedirs('charts', exist_ok=True)\nplt.plot([1]); plt.savefig('charts/c.png')\nopen('out.csv', 'a').write('2\\n')",
      )
      expect(changed.artifacts.map((a) => [a.name, a.mimeType])).toEqual([
        ['charts/c.png', 'image/png'],
        ['out.csv', 'text/csv'],
      ])
      expect(await sandbox.files.read('out.csv')).toBe('a\n1\n2\n')
    })
  })
}
