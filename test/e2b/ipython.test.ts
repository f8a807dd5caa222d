/**
 * IPython's syntax in cells and what E2B's template shows through IPython (PIL images,
 * IPython.display), through the official SDK against `analyst serve`, as E2B's users write them:
 * `!pwd`, `x = !ls`, `%timeit`, `%%bash`, `%pip install` in a sandbox without network.
 */
import { Sandbox } from '@e2b/code-interpreter'
import { describe, expect, it } from 'vitest'
import { serverWithSandbox } from './server.js'

const served = serverWithSandbox(() => Sandbox.create())
const stdout = (execution: { logs: { stdout: string[] } }) => execution.logs.stdout.join('')
const stderr = (execution: { logs: { stderr: string[] } }) => execution.logs.stderr.join('')

describe('E2B SDK: IPython syntax in cells', () => {
  it('runs !command in the sandbox, in the cell’s folder and environment, and counts the cell', async () => {
    const first = await served.sandbox.runCode('!pwd')
    expect(first.error).toBeUndefined()
    expect(stdout(first).trim()).toBe('/home/user')
    const second = await served.sandbox.runCode('!echo "$GREETING" from $(basename $PWD)', {
      envs: { GREETING: 'hello' },
    })
    expect(stdout(second)).toBe('hello from user\n')
    expect(second.executionCount).toBe((first.executionCount ?? 0) + 1)
  })

  it('keeps the output of x = !command as a list of lines, and the exit code in _exit_code', async () => {
    const execution = await served.sandbox.runCode(
      '!mkdir -p listed && touch listed/b.txt listed/a.txt\nnames = !ls listed\n!exit 3\n(names, names.s, _exit_code)',
    )
    expect(execution.error).toBeUndefined()
    expect(execution.text).toBe("(['a.txt', 'b.txt'], 'a.txt b.txt', 3)")
  })

  it('expands {expressions} of the namespace in commands', async () => {
    const execution = await served.sandbox.runCode("folder = 'listed'\n!ls {folder}")
    expect(stdout(execution)).toBe('a.txt\nb.txt\n')
  })

  it('expands $name, $obj.attr and a function’s own names, as IPython does, with $$ for a dollar', async () => {
    const execution = await served.sandbox.runCode(
      [
        "folder = 'listed'",
        '!ls $folder',
        'class Where:',
        "    path = 'listed/a.txt'",
        '!echo $Where.path $$USER-$$HOME',
        'def listing():',
        "    inner = 'listed'",
        '    found = !ls $inner',
        '    return found',
        'listing()',
      ].join('\n'),
    )
    expect(execution.error).toBeUndefined()
    expect(stdout(execution)).toBe('a.txt\nb.txt\nlisted/a.txt user-/home/user\n')
    expect(execution.text).toBe("['a.txt', 'b.txt']")
  })

  it('times code with %timeit and %time in the cell’s namespace', async () => {
    const timed = await served.sandbox.runCode('values = list(range(100))\n%timeit -n 10 -r 3 sum(values)')
    expect(timed.error).toBeUndefined()
    expect(stdout(timed)).toMatch(/ per loop \(mean ± std\. dev\. of 3 runs, 10 loops each\)\n$/)
    const once = await served.sandbox.runCode('%time sum(values)')
    expect(stdout(once)).toContain('Wall time: ')
    expect(once.text).toBe('4950')
  })

  it('runs %%bash and %%writefile cells, and %cd and %env lines', async () => {
    const bash = await served.sandbox.runCode('%%bash\necho out\necho err >&2\nexit 0')
    expect([stdout(bash), stderr(bash)]).toEqual(['out\n', 'err\n'])
    await served.sandbox.runCode('%%writefile notes.txt\nfirst line\n')
    expect(await served.sandbox.files.read('notes.txt')).toBe('first line\n')
    const moved = await served.sandbox.runCode(
      "%cd listed\n%env COLOUR=blue\nimport os\n(os.getcwd(), os.environ['COLOUR'])",
    )
    expect(moved.text).toBe("('/home/user/listed', 'blue')")
    await served.sandbox.runCode('%cd /home/user')
  })

  it('shows %%html and %%markdown cells as results', async () => {
    const html = await served.sandbox.runCode('%%html\n<b>bold</b>')
    expect(html.results[0]?.html?.trim()).toBe('<b>bold</b>')
    const markdown = await served.sandbox.runCode('%%markdown\n# Title')
    expect(markdown.results[0]?.markdown?.trim()).toBe('# Title')
  })

  it('names the magics it has when a cell uses one it has not', async () => {
    const execution = await served.sandbox.runCode('%load_extension foo')
    expect(execution.error?.name).toBe('UsageError')
    expect(execution.error?.value).toContain('%timeit')
    expect(execution.error?.traceback).not.toContain('analyst_ipython.py')
  })

  it('still reports a syntax error of plain Python as one, without the kernel’s frames', async () => {
    const execution = await served.sandbox.runCode('def broken(:\n    pass')
    expect(execution.error?.name).toBe('SyntaxError')
    expect(execution.error?.traceback).not.toContain('analyst_')
  })

  it('explains that !pip install has no network, and which packages are there', async () => {
    for (const code of [
      '!pip install pandas surely-not-installed==1.0',
      '%pip install -q pandas surely-not-installed',
    ]) {
      const execution = await served.sandbox.runCode(code)
      expect(execution.error).toBeUndefined()
      const said = stderr(execution)
      expect(said).toContain('the sandbox has no network')
      expect(said).toMatch(/pandas: installed already \(\d/)
      expect(said).toContain('surely-not-installed: not installed')
      expect(said).toMatch(/Installed: .*numpy \d/)
    }
  })

  it('lets pip commands that need no network run', async () => {
    const execution = await served.sandbox.runCode('!python3 -m pip --version')
    expect(stdout(execution)).toMatch(/^pip \d/)
  })
})

describe('E2B SDK: what E2B’s template shows through IPython', () => {
  const image = "from PIL import Image\nimage = Image.new('RGB', (8, 8), 'red')\n"
  const isPng = (base64: string | undefined) =>
    Buffer.from(base64 ?? '', 'base64')
      .subarray(1, 4)
      .toString('latin1') === 'PNG'

  it('gives a PIL image that is the last expression, shown or saved as a png result', async () => {
    for (const code of [
      `${image}image`,
      `${image}image.show()`,
      `${image}image.save('red.png')\nprint('done')`,
    ]) {
      const execution = await served.sandbox.runCode(code)
      expect(execution.error).toBeUndefined()
      expect(execution.results).toHaveLength(1)
      expect(isPng(execution.results[0]?.png)).toBe(true)
    }
    expect((await served.sandbox.files.read('red.png', { format: 'bytes' })).length).toBeGreaterThan(0)
  })

  it('does not show a figure twice when matplotlib saves it through PIL', async () => {
    const execution = await served.sandbox.runCode(
      "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('line.png')\nplt.show()",
    )
    expect(execution.results).toHaveLength(1)
  })

  it('shows IPython.display.display(...) as results, and IPython.get_ipython() is the kernel’s', async () => {
    const execution = await served.sandbox.runCode(
      "from IPython.display import display, HTML, Markdown\nfrom IPython import get_ipython\ndisplay(HTML('<i>x</i>'), Markdown('**y**'))\nget_ipython().run_line_magic('matplotlib', 'inline')",
    )
    expect(execution.error).toBeUndefined()
    expect(execution.results.map((result) => result.html ?? result.markdown)).toEqual(['<i>x</i>', '**y**'])
  })
})
