/**
 * What every sandbox engine must do, as one suite each engine runs (as Hono's routers share
 * common.case.test.ts): `describeConformance({ name, create, skip })` in a vitest file. Shipped on
 * `analyst/test` for third-party engines (it needs vitest, an optional peer dependency).
 * @module
 */
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FULL_CAPABILITIES, missingCapabilities } from '../sandbox/capabilities.js'
import {
  CommandExitError,
  type CreateOpts,
  type Execution,
  type OutputMessage,
  type Result,
  type Sandbox,
  type SandboxCapabilities,
} from '../sandbox/index.js'

export interface ConformanceOptions {
  name: string
  create: (options?: CreateOpts) => Promise<Sandbox>
  /** What the engine enforces (its provider's `capabilities`): tests of the rest are skipped, and said. @default all */
  capabilities?: SandboxCapabilities
  /** Tests a backend cannot pass, each with the reason. */
  skip?: Array<{ reason: string; tests: string[] }>
  /**
   * How the text of a string result reads: Python's repr (`'a'`), or without its enclosing quotes
   * (`a`), as E2B's code-interpreter server sends it. @default 'repr'
   */
  stringText?: 'repr' | 'unquoted'
  /**
   * The engine runs Python. An engine that runs none (a mock) is held only to the sandbox's
   * lifecycle: what it refuses once killed. @default true
   */
  python?: boolean
}

const PNG_MAGIC = 'iVBORw0KGgo' // base64 of the PNG signature

export function describeConformance({
  name,
  create,
  capabilities = FULL_CAPABILITIES,
  skip = [],
  stringText = 'repr',
  python = true,
}: ConformanceOptions) {
  /** The text of a string result whose repr is `repr`. */
  const str = (repr: string) => (stringText === 'repr' ? repr : repr.slice(1, -1))
  const skipped = new Set(skip.flatMap((entry) => entry.tests))
  const test = (title: string, fn: () => Promise<void>, timeout?: number) =>
    (skipped.has(title) ? it.skip : it)(title, fn, timeout)
  const missing = missingCapabilities(capabilities)
  if (missing.length > 0) {
    // Said in the test output, as the user is told by doctor and the CLI.
    console.info(`sandbox conformance: ${name} does not enforce: ${missing.join('; ')}`)
  }
  if (!python) console.info(`sandbox conformance: ${name} runs no Python: only its lifecycle is tested`)
  /** A part of the suite that needs Python. */
  const describePython = python ? describe : describe.skip
  const hostFiles: string[] = []
  afterAll(() => {
    for (const dir of hostFiles) rmSync(dir, { recursive: true, force: true })
  })
  /** A host file for `data`, removed after the suite. */
  const hostFile = (name: string, content: string): string => {
    const dir = mkdtempSync(join(tmpdir(), 'analyst-conformance-'))
    hostFiles.push(dir)
    writeFileSync(join(dir, name), content)
    return join(dir, name)
  }

  describePython(`sandbox conformance: ${name}`, () => {
    let sandbox: Sandbox
    beforeAll(async () => {
      sandbox = await create()
    })
    afterAll(async () => {
      await sandbox?.kill()
    })
    const run = (code: string, options?: Parameters<Sandbox['runCode']>[1]): Promise<Execution> =>
      sandbox.runCode(code, options)
    /** The workspace as code sees it: /home/user, or the engine's own folder (homeWorkspace false). */
    const workspaceSeenByCode = async () =>
      capabilities.homeWorkspace
        ? '/home/user'
        : (await run('import os\nprint(os.getcwd())')).logs.stdout.join('').trim()

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
        [str("'first'"), false],
        ['2', false],
        ['3', false],
        [str("'last'"), true],
      ])
    })

    test('streams stdout and stderr line by line while the cell runs', async () => {
      // The cell goes on only once the host has seen its first line (the host then writes a file
      // that the cell waits for), so that line cannot have come with the cell's end. Where the files
      // API waits for the running cell (filesDuringCells false) nothing can reach the cell while it
      // runs: it pauses instead, and only the order and the split into lines are checked.
      const acknowledges = capabilities.filesDuringCells
      const seen: OutputMessage[] = []
      let acknowledged: Promise<unknown> | undefined
      const execution = await run(
        [
          'import os, sys, time',
          "print('one')",
          'sys.stdout.flush()',
          ...(acknowledges
            ? [
                'deadline = time.monotonic() + 30',
                "while not os.path.exists('seen-one') and time.monotonic() < deadline:",
                '    time.sleep(0.02)',
                "os.path.exists('seen-one') or print('never acknowledged')",
              ]
            : ['time.sleep(0.5)']),
          "print('two', file=sys.stderr)",
          "print('three\\nfour', end='')",
        ].join('\n'),
        {
          onStdout: (message) => {
            seen.push(message)
            if (acknowledges && message.line === 'one\n') {
              acknowledged = sandbox.files.write('seen-one', '')
              acknowledged.catch(() => {}) // awaited below; not an unhandled rejection meanwhile
            }
          },
          onStderr: (message) => seen.push(message),
        },
      )
      // Removed by the host, not the cell: a Jupyter server answers a write with the file's model,
      // and fails it when the file is gone by then.
      if (acknowledged) await acknowledged.then(() => sandbox.files.remove('seen-one'))
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
      expect(results.map((r) => r.text)).toEqual([str("'shown'")])
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

    test("gives the data behind a figure as chart, in E2B's shape", async () => {
      const execution = await run(
        "import matplotlib.pyplot as plt\nplt.bar(['a', 'b'], [3, 5], label='n')\nplt.title('Counts')\nplt.xlabel('Letter')\nplt.show()",
      )
      const [figure] = execution.results
      expect(figure?.png?.startsWith(PNG_MAGIC)).toBe(true)
      // E2B's fields; Analyst adds more (charts.ts), which an E2B reader ignores.
      expect(figure?.chart).toMatchObject({
        type: 'bar',
        title: 'Counts',
        x_label: 'Letter',
        y_label: null,
        x_unit: null,
        y_unit: null,
        elements: [
          { label: 'a', group: 'n', value: 3 },
          { label: 'b', group: 'n', value: 5 },
        ],
      })
    })

    test('sets environment variables for one cell with envs', async () => {
      const execution = await run("import os\nos.environ.get('ANALYST_CELL_VAR')", {
        envs: { ANALYST_CELL_VAR: 'yes' },
      })
      expect(execution.text).toBe(str("'yes'"))
      expect((await run("os.environ.get('ANALYST_CELL_VAR')")).results).toEqual([])
    })

    test('contexts have their own variables', async () => {
      const context = await sandbox.createContext()
      await run('shared = "default"')
      await run('shared = "other"', { context })
      expect((await run('shared')).text).toBe(str("'default'"))
      expect((await run('shared', { context })).text).toBe(str("'other'"))
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
      expect((await run("open('notes/hello.txt', encoding='utf-8').read()")).text).toBe(str("'héllo\\n'"))
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

    test('restarting a context clears its variables; a removed context is gone', async () => {
      const context = await sandbox.createCodeContext()
      await run('kept = 1', { context })
      await sandbox.restartCodeContext(context)
      expect((await run('kept', { context })).error?.name).toBe('NameError')
      await sandbox.removeCodeContext(context)
      await expect(run('1', { context })).rejects.toThrow(/context/i)
    })

    test('runs shell commands in the workspace, with stdout, stderr and exit codes', async () => {
      await sandbox.files.write('from-files.txt', 'written by files\n')
      const result = await sandbox.commands.run('pwd; cat from-files.txt; echo err >&2')
      expect(result).toMatchObject({
        exitCode: 0,
        stdout: `${await workspaceSeenByCode()}\nwritten by files\n`,
        stderr: 'err\n',
      })
      const failed = await sandbox.commands.run('echo partial; exit 3').catch((error: unknown) => error)
      expect(failed).toBeInstanceOf(CommandExitError)
      expect(failed).toMatchObject({ exitCode: 3, stdout: 'partial\n' })
      await sandbox.commands.run('echo made by a command > by-command.txt')
      expect((await run("open('by-command.txt').read()")).text).toBe(str("'made by a command\\n'"))
    })

    test('commands get envs, a cwd, stdin, streamed output, and can run in the background and be killed', async () => {
      const env = await sandbox.commands.run('echo "$ONE $HOME"; pwd', { envs: { ONE: 'uno' }, cwd: '/tmp' })
      expect(env.stdout).toBe(`uno ${await workspaceSeenByCode()}\n/tmp\n`)
      const chunks: string[] = []
      const cat = await sandbox.commands.run('cat; echo done', {
        background: true,
        stdin: true,
        onStdout: (data) => void chunks.push(data),
      })
      await cat.sendStdin('first\n')
      await cat.closeStdin()
      expect((await cat.wait()).stdout).toBe('first\ndone\n')
      expect(chunks.join('')).toBe('first\ndone\n')
      const sleeper = await sandbox.commands.run('sleep 60', { background: true })
      expect((await sandbox.commands.list()).map((p) => p.pid)).toContain(sleeper.pid)
      expect(await sandbox.commands.kill(sleeper.pid)).toBe(true)
      await expect(sleeper.wait()).rejects.toMatchObject({ exitCode: 137 })
      expect((await sandbox.commands.list()).map((p) => p.pid)).not.toContain(sleeper.pid)
    })

    test('interrupts a cell at its timeout and keeps the state', async () => {
      await run('kept = 123')
      // The timeout must come after the cell printed: 2 s is far more than a cell takes to start,
      // even on a busy machine.
      const execution = await run("import time\nprint('started', flush=True)\ntime.sleep(30)", {
        timeoutMs: 2000,
      })
      expect(execution.error?.name).toBe('TimeoutError')
      expect(execution.error?.value).toMatch(/variables and imports are kept/)
      expect(execution.error?.traceback).toContain('time.sleep(30)')
      expect(execution.logs.stdout).toEqual(['started\n'])
      expect((await run('kept')).text).toBe('123')
    })

    test('rejects with the abort reason when the caller aborts, and keeps the state', async () => {
      await run('kept = "still here"')
      const controller = new AbortController()
      // Aborted once the cell says it runs. An engine whose abort does not interrupt lets the cell
      // end by itself before the next one: a shorter one, then.
      const seconds = capabilities.abortInterrupts ? 20 : 3
      await expect(
        run(`import time\nprint('running', flush=True)\ntime.sleep(${seconds})`, {
          signal: controller.signal,
          onStdout: () => controller.abort(new Error('user pressed stop')),
        }),
      ).rejects.toThrow('user pressed stop')
      expect((await run('kept')).text).toBe(str("'still here'"))
    })
  })

  describePython(`sandbox conformance: ${name}: data files in`, () => {
    let sandbox: Sandbox
    beforeAll(async () => {
      sandbox = await create({ data: [hostFile('input.csv', 'a,b\n1,2\n3,4\n')] })
    })
    afterAll(async () => {
      await sandbox?.kill()
    })

    test('gives files passed at creation to code at data/<name>', async () => {
      const execution = await sandbox.runCode(
        "import pandas as pd\nprint(pd.read_csv('data/input.csv').to_dict('list'))",
      )
      expect(execution.logs.stdout).toEqual(["{'a': [1, 3], 'b': [2, 4]}\n"])
      expect(await sandbox.files.read('data/input.csv')).toBe('a,b\n1,2\n3,4\n')
      expect(await sandbox.files.list('data')).toEqual([
        { name: 'input.csv', type: 'file', path: '/home/user/data/input.csv', size: 12 },
      ])
    })

    test('adds a data file to a running sandbox, and does not report inputs as artifacts', async () => {
      const info = await sandbox.files.addData(hostFile('more.csv', 'x\n7\n'), 'more.csv')
      expect(info).toEqual({ name: 'more.csv', type: 'file', path: '/home/user/data/more.csv', size: 4 })
      const execution = await sandbox.runCode("int(open('data/more.csv').read().split()[1]) * 6")
      expect(execution.text).toBe('42')
      expect(execution.artifacts).toEqual([])
    })

    test('moves files larger than one request both ways, byte for byte', async () => {
      const big = new Uint8Array(9 * 1024 * 1024 + 7).map((_, i) => (i * 31 + (i >> 12)) & 255)
      const path = hostFile('big.bin', '')
      writeFileSync(path, big)
      await sandbox.files.addData(path, 'big.bin')
      await sandbox.files.write('copy.bin', big)
      const check = await sandbox.runCode(
        "import hashlib\nfor p in ('data/big.bin', 'copy.bin'):\n    print(hashlib.sha256(open(p, 'rb').read()).hexdigest())",
      )
      const digest = createHash('sha256').update(big).digest('hex')
      expect(check.logs.stdout).toEqual([`${digest}\n`, `${digest}\n`])
      await sandbox.runCode("open('made.bin', 'wb').write(open('copy.bin', 'rb').read()[::-1])")
      const made = await sandbox.files.read('made.bin', { format: 'bytes' })
      expect(Buffer.from(made).equals(Buffer.from(big).reverse())).toBe(true)
    }, 120_000)

    it.skipIf(!capabilities.readOnlyData)('keeps data files read-only for code', async () => {
      const execution = await sandbox.runCode(
        "try:\n    open('data/input.csv', 'a').write('x')\nexcept OSError as e:\n    print(type(e).__name__)",
      )
      expect(execution.logs.stdout).toEqual(['PermissionError\n'])
    })
  })

  describePython(`sandbox conformance: ${name}: kernels that stop`, () => {
    let sandbox: Sandbox
    beforeAll(async () => {
      sandbox = await create()
    })
    afterAll(async () => {
      await sandbox?.kill()
    })

    const rebuilds = capabilities.rebuildsKernelState
    test('restarts a kernel that ignores the interrupt, and says what became of the state', async () => {
      await sandbox.runCode('kept = 456')
      // SIGINT is ignored from the cell before, so that the interrupt cannot come before it is ignored,
      // and again in the cell: a Jupyter kernel (ipykernel) restores its own handler for each cell.
      // An interrupt that comes before that is swallowed too.
      await sandbox.runCode('import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)')
      const execution = await sandbox.runCode(
        [
          'while True:',
          '    try:',
          '        signal.signal(signal.SIGINT, signal.SIG_IGN)',
          '        while True:',
          '            time.sleep(0.05)',
          '    except KeyboardInterrupt:',
          '        pass',
        ].join('\n'),
        { timeoutMs: 300 },
      )
      expect(execution.error?.name).toBe('TimeoutError')
      if (rebuilds) {
        // The kernel was killed and rebuilt by replay, or (an engine that cannot tell which, such
        // as E2B's client) says the state is kept: either way it must be.
        expect(execution.error?.value).toMatch(
          /cells that ran without error before run again in a new kernel|variables and imports are kept/,
        )
        expect((await sandbox.runCode('kept')).text).toBe('456')
      } else {
        expect(execution.error?.value).toMatch(/variables and imports were lost/)
        expect((await sandbox.runCode('kept')).error?.name).toBe('NameError')
      }
      expect((await sandbox.runCode('1 + 1')).text).toBe('2')
    }, 30_000)

    test('reports a kernel SIGKILLed mid-cell, and runs the next cell in a new kernel, rebuilt where the engine can', async () => {
      await sandbox.runCode('kept = 1')
      await sandbox.runCode('import math\nkept += 1')
      await sandbox.runCode('raise ValueError("not run again")')
      // The killed cell is not run again: its first line would double `kept`.
      const execution = await sandbox.runCode(
        "kept *= 10\nprint('before', flush=True)\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
      )
      expect(execution.error?.name).toBe('KernelDied')
      // Analyst's kernel writes output to its pipe before the next line runs. A Jupyter kernel
      // hands it to ZMQ's I/O thread, which a SIGKILL right after may beat on a busy machine.
      if (rebuilds) expect(execution.logs.stdout).toEqual(['before\n'])
      else expect(['', 'before\n']).toContain(execution.logs.stdout.join(''))
      if (rebuilds) {
        expect(execution.error?.value).toMatch(/killed by SIGKILL/)
        expect(execution.error?.value).toMatch(/cells that ran without error before run again/)
        expect((await sandbox.runCode('kept, math.pi > 3')).text).toBe('(2, True)')
      } else {
        expect(execution.error?.value).toMatch(/variables and imports were lost/)
        expect((await sandbox.runCode('kept')).error?.name).toBe('NameError')
      }
      expect((await sandbox.runCode('2 * 21')).text).toBe('42')
    }, 30_000)
  })

  describe(`sandbox conformance: ${name}: kill`, () => {
    test('kill() ends the sandbox: its files are gone and every later call is refused, none starts a kernel', async () => {
      const sandbox = await create()
      await sandbox.files.write('left.txt', 'x')
      const context = await sandbox.createContext()
      if (python) await sandbox.runCode("open('made.txt', 'w').write('y')")
      await sandbox.kill()
      await sandbox.kill() // twice is fine
      const calls: Record<string, () => Promise<unknown>> = {
        runCode: () => sandbox.runCode('1'),
        'files.read': () => sandbox.files.read('left.txt'),
        'files.write': () => sandbox.files.write('new.txt', 'x'),
        'files.list': () => sandbox.files.list('.'),
        'files.exists': () => sandbox.files.exists('left.txt'),
        createContext: () => sandbox.createContext(),
        'runCode in a context': () => sandbox.runCode('1', { context }),
      }
      for (const [call, refused] of Object.entries(calls)) {
        await expect(refused(), call).rejects.toThrow(/killed/)
      }
      // Optional parts of the spec: refused as killed, or as not supported by the engine at all.
      const optional: Record<string, () => Promise<unknown>> = {
        restartCodeContext: async () => sandbox.restartCodeContext('default'),
        'restartCodeContext of a context': async () => sandbox.restartCodeContext(context),
        removeCodeContext: async () => sandbox.removeCodeContext(context),
        'commands.run': async () => sandbox.commands.run('true'),
      }
      for (const [call, refused] of Object.entries(optional)) {
        await expect(refused(), call).rejects.toThrow(/killed|cannot/)
      }
    })
  })
}
