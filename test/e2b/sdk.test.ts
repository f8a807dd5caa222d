/**
 * The official E2B JS SDK (@e2b/code-interpreter, and e2b under it), unchanged, against `analyst
 * serve` on 127.0.0.1: the behaviours of E2B's own tests (js/tests in e2b-dev/code-interpreter).
 */
import { CommandExitError, FileNotFoundError, type Result, Sandbox } from '@e2b/code-interpreter'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type E2BServer, startE2BServer } from './server.js'

let e2b: E2BServer
let sandbox: Sandbox
beforeAll(async () => {
  e2b = await startE2BServer()
  sandbox = await Sandbox.create({ envs: { SANDBOX_WIDE: 'everywhere' } })
})
afterAll(async () => {
  await sandbox?.kill()
  await e2b?.close()
})

describe('E2B SDK: the code interpreter', () => {
  it('runs code and gives the last expression as text', async () => {
    expect((await sandbox.runCode('x = 1; x')).text).toBe('1')
    expect((await sandbox.runCode('x + 41')).text).toBe('42')
  })

  it('counts executions', async () => {
    const first = await sandbox.runCode('1')
    const second = await sandbox.runCode('2')
    expect(second.executionCount).toBe((first.executionCount ?? 0) + 1)
  })

  it('strips the quotes of a string result, as E2B does, and runs in /home/user', async () => {
    expect((await sandbox.runCode('import os; os.getcwd()')).text).toBe('/home/user')
  })

  it('calls onStdout, onStderr, onResult and onError as the cell runs', async () => {
    const seen: string[] = []
    const execution = await sandbox.runCode(
      "import sys\nprint('out')\nprint('err', file=sys.stderr)\ndisplay('shown')\nraise ValueError('bad')",
      {
        onStdout: (m) => void seen.push(`stdout:${m.line}`),
        onStderr: (m) => void seen.push(`stderr:${m.line}`),
        onResult: (r) => void seen.push(`result:${r.text}`),
        onError: (e) => void seen.push(`error:${e.name}:${e.value}`),
      },
    )
    expect(seen).toEqual(['stdout:out\n', 'stderr:err\n', 'result:shown', 'error:ValueError:bad'])
    expect(execution.logs).toEqual({ stdout: ['out\n'], stderr: ['err\n'] })
    expect(execution.error?.traceback).toContain('ValueError: bad')
  })

  it('keeps multi-byte characters whole however the stream is cut', async () => {
    const execution = await sandbox.runCode("print('é' * 40000)\n'ü' * 3")
    expect(execution.logs.stdout.join('')).toBe(`${'é'.repeat(40000)}\n`)
    expect(execution.text).toBe('üüü')
  })

  it('runs code indented as a whole, as IPython does', async () => {
    expect((await sandbox.runCode('\n        a = 2\n        a * 21\n        ')).text).toBe('42')
  })

  it('gives a matplotlib figure as PNG on plt.show()', async () => {
    const execution = await sandbox.runCode(
      'import matplotlib.pyplot as plt\nimport numpy as np\nx = np.linspace(0, 20, 100)\nplt.plot(x, np.sin(x))\nplt.show()',
    )
    const [image] = execution.results
    expect(image?.png?.startsWith('iVBORw0KGgo')).toBe(true)
    expect(image?.text).toBeDefined()
    expect(image?.extra).toEqual({})
  })

  it('gives a DataFrame as data, html and text', async () => {
    const execution = await sandbox.runCode("import pandas as pd\npd.DataFrame({'a': [1, 2, 3]})")
    const result = execution.results[0] as Result
    expect(result.data).toEqual({ a: [1, 2, 3] })
    expect(result.html).toContain('<table')
    expect(result.formats()).toEqual(expect.arrayContaining(['html', 'data']))
  })

  it('displays LaTeX, Markdown and SVG', async () => {
    const execution = await sandbox.runCode(
      "from IPython.display import Latex, Markdown, SVG\ndisplay(Latex(r'$\\alpha$'))\ndisplay(Markdown('**bold**'))\nSVG('<svg xmlns=\"http://www.w3.org/2000/svg\"><circle r=\"1\"/></svg>')",
    )
    expect(execution.error).toBeUndefined()
    expect(execution.results.map((r) => r.latex ?? r.markdown ?? r.svg)).toEqual([
      '$\\alpha$',
      '**bold**',
      expect.stringContaining('<circle r="1"/>'),
    ])
    expect(execution.results.map((r) => r.isMainResult)).toEqual([false, false, true])
  })

  it('keeps contexts apart; restart clears one; remove deletes it', async () => {
    const context = await sandbox.createCodeContext({ cwd: '/home/user' })
    expect(context).toMatchObject({ language: 'python', cwd: '/home/user' })
    const listed = await sandbox.listCodeContexts()
    expect(listed.at(-1)?.id).toBe(context.id)
    expect(listed.map((c) => c.language)).toContain('python')
    await sandbox.runCode('only_here = 1', { context })
    expect((await sandbox.runCode('only_here')).error?.name).toBe('NameError')
    expect((await sandbox.runCode('only_here', { context })).text).toBe('1')
    await sandbox.restartCodeContext(context.id)
    const restarted = await sandbox.runCode('only_here', { context })
    expect(restarted.error).toMatchObject({ name: 'NameError', value: "name 'only_here' is not defined" })
    await sandbox.removeCodeContext(context.id)
    expect((await sandbox.listCodeContexts()).map((c) => c.id)).not.toContain(context.id)
    await expect(sandbox.createCodeContext({ language: 'fortran' })).rejects.toThrow(/400/)
  })

  it('has the sandbox env vars, and per-execution ones only for that execution', async () => {
    expect((await sandbox.runCode("import os; os.getenv('SANDBOX_WIDE')")).text).toBe('everywhere')
    const once = await sandbox.runCode("os.getenv('FOO')", { envs: { FOO: 'bar' } })
    expect(once.text).toBe('bar')
    expect((await sandbox.runCode("os.getenv('FOO', 'default')")).text).toBe('default')
    const overwritten = await sandbox.runCode("os.getenv('SANDBOX_WIDE')", { envs: { SANDBOX_WIDE: 'over' } })
    expect(overwritten.text).toBe('over')
    expect((await sandbox.runCode("os.getenv('SANDBOX_WIDE')")).text).toBe('everywhere')
  })

  it('interrupts a cell whose client timed out, and the next one runs', async () => {
    await sandbox.runCode('kept = "yes"')
    await expect(sandbox.runCode('import time; time.sleep(300)', { timeoutMs: 1500 })).rejects.toThrow(
      /timed out/i,
    )
    // The interrupt reaches the kernel shortly after the disconnect; the next cell waits behind it.
    const next = await sandbox.runCode('kept', { timeoutMs: 20_000 })
    expect(next.text).toBe('yes')
  })
})

describe('E2B SDK: files', () => {
  it('writes, reads, lists, checks, makes folders, renames and removes', async () => {
    const written = await sandbox.files.write('notes/hello.txt', 'héllo\n')
    expect(written).toMatchObject({ name: 'hello.txt', path: '/home/user/notes/hello.txt' })
    expect(await sandbox.files.read('notes/hello.txt')).toBe('héllo\n')
    expect(await sandbox.files.read('/home/user/notes/hello.txt', { format: 'bytes' })).toEqual(
      new TextEncoder().encode('héllo\n'),
    )
    expect((await sandbox.runCode("open('notes/hello.txt').read()")).text).toBe('héllo\\n')
    expect(await sandbox.files.exists('notes/hello.txt')).toBe(true)
    expect(await sandbox.files.exists('notes/missing.txt')).toBe(false)
    expect(await sandbox.files.makeDir('notes/sub/deeper')).toBe(true)
    expect(await sandbox.files.makeDir('notes/sub/deeper')).toBe(false)
    const listed = await sandbox.files.list('notes')
    expect(listed.map((e) => [e.name, e.type])).toEqual([
      ['hello.txt', 'file'],
      ['sub', 'dir'],
    ])
    expect((await sandbox.files.list('notes', { depth: 3 })).map((e) => e.path)).toContain(
      '/home/user/notes/sub/deeper',
    )
    const moved = await sandbox.files.rename('notes/hello.txt', 'notes/sub/moved.txt')
    expect(moved).toMatchObject({ name: 'moved.txt', type: 'file', size: 7 })
    expect(await sandbox.files.getInfo('notes/sub/moved.txt')).toMatchObject({ size: 7, type: 'file' })
    await sandbox.files.remove('notes')
    expect(await sandbox.files.exists('notes')).toBe(false)
    await expect(sandbox.files.read('notes/sub/moved.txt')).rejects.toBeInstanceOf(FileNotFoundError)
  })

  it('writes several files at once, and binary data through gzip', async () => {
    const infos = await sandbox.files.write([
      { path: 'many/a.txt', data: 'A' },
      { path: 'many/b.bin', data: new Uint8Array([0, 255, 1]).buffer },
    ])
    expect(infos.map((i) => i.path)).toEqual(['/home/user/many/a.txt', '/home/user/many/b.bin'])
    expect(await sandbox.files.read('many/b.bin', { format: 'bytes' })).toEqual(new Uint8Array([0, 255, 1]))
    await sandbox.files.write('many/zipped.txt', 'x'.repeat(10_000), { gzip: true })
    expect(await sandbox.files.read('many/zipped.txt')).toBe('x'.repeat(10_000))
  })

  it('watches a folder: files created, written and removed', async () => {
    await sandbox.files.makeDir('watched')
    const events: string[] = []
    const handle = await sandbox.files.watchDir(
      'watched',
      (event) => void events.push(`${event.type}:${event.name}`),
      {
        recursive: true,
      },
    )
    try {
      await sandbox.runCode(
        "import os\nos.makedirs('watched/sub', exist_ok=True)\nopen('watched/sub/a.txt', 'w').write('1')",
      )
      await expect.poll(() => events, { timeout: 10_000 }).toContain('create:sub/a.txt')
      await sandbox.runCode("open('watched/sub/a.txt', 'a').write('23')")
      await expect.poll(() => events, { timeout: 10_000 }).toContain('write:sub/a.txt')
      await sandbox.files.remove('watched/sub/a.txt')
      await expect.poll(() => events, { timeout: 10_000 }).toContain('remove:sub/a.txt')
    } finally {
      await handle.stop()
    }
  })

  it('refuses paths outside the workspace', async () => {
    await expect(sandbox.files.write('/etc/evil', 'x')).rejects.toThrow(/outside the sandbox/)
    await expect(sandbox.files.read('../../etc/passwd')).rejects.toThrow(/outside the sandbox/)
  })
})

describe('E2B SDK: commands', () => {
  it('runs a command in the jail, with its output and exit code', async () => {
    const result = await sandbox.commands.run(
      'ls -la /home/user >/dev/null && echo "$SANDBOX_WIDE" && pwd && id -un',
    )
    expect(result).toMatchObject({ exitCode: 0, stdout: 'everywhere\n/home/user\nuser\n', stderr: '' })
    const failed = await sandbox.commands.run('echo oops >&2; exit 7').catch((error: unknown) => error)
    expect(failed).toBeInstanceOf(CommandExitError)
    expect(failed).toMatchObject({ exitCode: 7, stderr: 'oops\n' })
  })

  it('streams output, takes envs, a cwd and stdin, runs in the background and is killed', async () => {
    const chunks: string[] = []
    const result = await sandbox.commands.run('echo one; sleep 0.3; echo two "$LOCAL"', {
      envs: { LOCAL: 'here' },
      cwd: '/tmp',
      onStdout: (data) => void chunks.push(data),
    })
    expect(result.stdout).toBe('one\ntwo here\n')
    expect(chunks.join('')).toBe('one\ntwo here\n')
    expect(chunks.length).toBeGreaterThanOrEqual(2)

    const cat = await sandbox.commands.run('cat', { background: true, stdin: true })
    await sandbox.commands.sendStdin(cat.pid, 'from stdin\n')
    await sandbox.commands.closeStdin(cat.pid)
    expect((await cat.wait()).stdout).toBe('from stdin\n')

    const sleeper = await sandbox.commands.run('sleep 120', { background: true })
    const listed = await sandbox.commands.list()
    expect(listed.find((p) => p.pid === sleeper.pid)).toMatchObject({
      cmd: '/bin/bash',
      args: ['-l', '-c', 'sleep 120'],
    })
    const follower = await sandbox.commands.connect(sleeper.pid)
    expect(await sandbox.commands.kill(sleeper.pid)).toBe(true)
    await expect(follower.wait()).rejects.toMatchObject({ exitCode: 137 })
    expect(await sandbox.commands.kill(sleeper.pid)).toBe(false)
  })

  it('has python on PATH beside python3, with pandas, as in E2B', async () => {
    const result = await sandbox.commands.run('python -c "import pandas, sys; print(sys.version_info[0])"')
    expect(result.stdout).toBe('3\n')
    const versions = await sandbox.commands.run('python --version; python3 --version')
    const [python, python3] = versions.stdout.trim().split('\n')
    expect(python).toBe(python3)
    expect(
      (
        await sandbox.runCode(
          "import subprocess; subprocess.run(['python', '-c', 'print(6 * 7)'], capture_output=True, text=True).stdout",
        )
      ).text,
    ).toBe('42\\n')
  })

  it('runs sudo as the same user (there is no root), saying so, as code for E2B writes it', async () => {
    const result = await sandbox.commands.run(
      'sudo -E id -u; id -u; sudo -u root sh -c \'echo "[$SCOPED]"\'',
      {
        envs: { SCOPED: 'kept' },
      },
    )
    const [asSudo, asUser, echoed] = result.stdout.trim().split('\n')
    expect(asSudo).toBe(asUser)
    expect(echoed).toBe('[kept]')
    expect(result.stderr).toContain('there is no root in this sandbox')
  })

  it('ends a command that outlives its timeoutMs', async () => {
    await expect(sandbox.commands.run('sleep 60', { timeoutMs: 1000 })).rejects.toThrow(/timeoutMs/)
    await expect
      .poll(async () => (await sandbox.commands.list()).filter((p) => p.args.includes('sleep 60')).length, {
        timeout: 10_000,
      })
      .toBe(0)
  })
})

describe('E2B SDK: many sandboxes', () => {
  it('keeps two sandboxes apart: variables, files and processes', async () => {
    const other = await Sandbox.create()
    try {
      await Promise.all([sandbox.runCode('who = "first"'), other.runCode('who = "second"')])
      await sandbox.files.write('mine.txt', 'first')
      expect((await other.runCode('who')).text).toBe('second')
      expect(await other.files.exists('mine.txt')).toBe(false)
      const sleeper = await sandbox.commands.run('sleep 30', { background: true })
      expect((await other.commands.list()).map((p) => p.pid)).not.toContain(sleeper.pid)
      await sleeper.kill()
    } finally {
      await other.kill()
    }
    await expect(other.runCode('1')).rejects.toThrow(/timeout|not found/i)
    expect(await other.isRunning()).toBe(false)
  })
})
