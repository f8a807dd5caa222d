/**
 * analyst_ipython.py and analyst_pip.py on the real Python, without a sandbox: what a cell with
 * IPython syntax becomes, what happens when the Python has no IPython, and which shell commands
 * are pip installs.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { findPython } from '../../python.js'
import { KERNEL_PYTHON_DIR } from './sources.js'

const run = promisify(execFile)

/** Runs a Python snippet beside the kernel's modules and returns what it prints as JSON. */
async function python(code: string): Promise<unknown> {
  const { executable } = await findPython()
  const { stdout } = await run(executable, ['-c', code], { cwd: KERNEL_PYTHON_DIR, timeout: 60_000 })
  return JSON.parse(stdout)
}

describe('IPython syntax in the kernel', () => {
  it('turns IPython lines into calls on get_ipython() with IPython’s own transformer', async () => {
    const cells = ['!ls -a', 'x = !ls', '%timeit f(1)', '%%bash\necho hi', 'print(1)\n%cd data']
    const rewritten = await python(`
import json, analyst_ipython as ip
cells = ${JSON.stringify(cells)}
out = []
for cell in cells:
    try:
        compile(cell, '<cell>', 'exec')
    except SyntaxError as error:
        out.append(ip.rewrite(cell, error))
print(json.dumps(out))`)
    expect(rewritten).toEqual([
      "get_ipython().system('ls -a')\n",
      "x = get_ipython().getoutput('ls')\n",
      "get_ipython().run_line_magic('timeit', 'f(1)')\n",
      "get_ipython().run_cell_magic('bash', '', 'echo hi\\n')\n",
      "print(1)\nget_ipython().run_line_magic('cd', 'data')\n",
    ])
  })

  it('gives a plain syntax error back as it was', async () => {
    const answer = await python(`
import json, analyst_ipython as ip
try:
    compile('def f(:', '<cell>', 'exec')
except SyntaxError as error:
    try:
        ip.rewrite('def f(:', error)
    except SyntaxError as again:
        print(json.dumps([again is error, type(again).__name__]))`)
    expect(answer).toEqual([true, 'SyntaxError'])
  })

  it('says what to install when the Python has no IPython, for IPython lines only', async () => {
    const answer = await python(`
import json, importlib.util, analyst_ipython as ip
importlib.util.find_spec = lambda name, *rest: None  # a Python without IPython
said = []
for cell in ('!ls', 'x = 1 +'):
    try:
        compile(cell, '<cell>', 'exec')
    except SyntaxError as error:
        try:
            ip.rewrite(cell, error)
        except SyntaxError as raised:
            said.append([type(raised).__name__, str(raised.msg if raised is error else raised)])
print(json.dumps(said))`)
    expect(answer).toEqual([
      ['IPythonMissing', expect.stringContaining('install python3-ipython')],
      ['SyntaxError', expect.any(String)],
    ])
  })
})

describe('pip installs in a sandbox', () => {
  it('finds the packages a command asks pip, conda or uv to install, and nothing else', async () => {
    const commands = [
      'pip install pandas "xgboost>=2" -q',
      'python3 -m pip install -r requirements.txt --index-url https://x seaborn',
      'cd /tmp && pip3 install polars; ls',
      'uv pip install duckdb',
      'conda install -y scipy',
      'pip list',
      'echo pip install x',
      'pip show pandas',
    ]
    const found = await python(`
import json, analyst_pip
print(json.dumps([analyst_pip.install_request(c) for c in ${JSON.stringify(commands)}]))`)
    expect(found).toEqual([
      ['pandas', 'xgboost>=2'],
      ['seaborn'],
      ['polars'],
      ['duckdb'],
      ['scipy'],
      null,
      null,
      null,
    ])
  })
})
