/**
 * The host's Python: the interpreter the local sandbox runs and the one that reads data files as
 * pandas will (src/data). Found once: ANALYST_PYTHON, else the first python3 that imports pandas.
 * @module
 */
import { execFile } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { SandboxUnavailableError } from './errors.js'

const run = promisify(execFile)

/**
 * Python modules Analyst puts on the path of every interpreter it runs, kernels and the host's
 * profiler alike (e.g. analyst_compat: the same readers everywhere), in src/ or dist/.
 */
export const PYLIB_DIR = join(dirname(fileURLToPath(import.meta.url)), 'pylib')

/** Finds the interpreter to use (data profiles take one as an option; this is the default). */
export type FindPython = () => Promise<PythonInfo>

/** A Python interpreter and what the sandbox needs to know of it. */
export interface PythonInfo {
  executable: string
  version: string
  /** sys.prefix, sys.base_prefix and every sys.path entry: the jail binds these read-only. */
  paths: string[]
  /** Which of the modules users expect can be imported. */
  modules: Record<string, boolean>
}

export const EXPECTED_MODULES = [
  'pandas',
  'numpy',
  'matplotlib',
  'scipy',
  'seaborn',
  'sklearn',
  'statsmodels',
  'openpyxl',
  'xlrd',
  'pyarrow',
] as const

// find_spec looks a module up without importing it: ~30 ms instead of ~600 ms for pandas.
const PROBE = `
import importlib.util, json, sys
mods = ${JSON.stringify(EXPECTED_MODULES)}
print(json.dumps({
  "version": sys.version.split()[0],
  "paths": sorted({p for p in [sys.prefix, sys.base_prefix, *sys.path] if p}),
  "modules": {m: importlib.util.find_spec(m) is not None for m in mods},
}))
`

/** How to run a probe some other way than directly: the local engine probes a template's Python in a jail. */
export interface ProbeOptions {
  wrap?: (argv: string[]) => string[]
  uid?: number
  gid?: number
}

export async function probePython(executable: string, options: ProbeOptions = {}): Promise<PythonInfo> {
  const [command, ...args] = (options.wrap ?? ((argv) => argv))([executable, '-s', '-c', PROBE])
  const { stdout } = await run(command as string, args, {
    uid: options.uid,
    gid: options.gid,
    timeout: 15_000,
    env: { PATH: '/usr/bin:/bin' },
  })
  const parsed = JSON.parse(stdout) as Omit<PythonInfo, 'executable'>
  return { executable, ...parsed }
}

function candidates(env: NodeJS.ProcessEnv): string[] {
  const fromPath = (env.PATH ?? '')
    .split(':')
    .filter(Boolean)
    .map((dir) => `${dir}/python3`)
  return [...new Set(['/usr/bin/python3', ...fromPath, '/usr/local/bin/python3'])]
}

let found: Promise<PythonInfo> | undefined

/**
 * `ANALYST_PYTHON` if set, else the first python3 that can import pandas (/usr/bin/python3 on
 * Debian, whatever comes first on PATH). Cached for the life of the process.
 */
export function findPython(env: NodeJS.ProcessEnv = process.env): Promise<PythonInfo> {
  if (env !== process.env) return locate(env)
  found ??= locate(env).catch((error) => {
    found = undefined
    throw error
  })
  return found
}

async function locate(env: NodeJS.ProcessEnv): Promise<PythonInfo> {
  const chosen = env.ANALYST_PYTHON
  if (chosen) {
    const info = await probePython(chosen).catch((cause) => {
      throw new SandboxUnavailableError(`ANALYST_PYTHON=${chosen} does not run`, {
        cause,
        hint: 'Point ANALYST_PYTHON at a Python 3 interpreter, or unset it to find one automatically.',
      })
    })
    if (!info.modules.pandas) {
      throw new SandboxUnavailableError(`ANALYST_PYTHON=${chosen} cannot import pandas`, {
        hint: `Install pandas for it (${chosen} -m pip install pandas matplotlib), or unset ANALYST_PYTHON.`,
      })
    }
    return info
  }
  for (const executable of candidates(env)) {
    const info = await probePython(executable).catch(() => undefined)
    if (info?.modules.pandas) return info
  }
  throw new SandboxUnavailableError('No Python interpreter with pandas was found', {
    hint:
      'On Debian/Ubuntu: sudo apt-get install python3-pandas python3-matplotlib python3-numpy python3-scipy python3-openpyxl; ' +
      'or set ANALYST_PYTHON to an interpreter that has pandas.',
  })
}
