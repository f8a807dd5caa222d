/**
 * Which pandas readers the sandbox's Python has, for `analyst doctor` and for choosing how a format
 * reaches the sandbox.
 * @module
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { MODULE_SOURCES, moduleFix, systemPackages } from '../packages.js'
import { type FindPython, findPython, PYLIB_DIR } from '../python.js'

const run = promisify(execFile)

export interface ReaderCheck {
  /** The format, as people name it. */
  format: string
  ok: boolean
  /** What reads it, or what is missing and what Analyst does instead. */
  detail: string
  /** A command that makes it readable on this machine, when there is one. */
  fix?: string
}

// find_spec looks modules up without importing them; analyst_compat says whether the xlrd found can
// read .xls for pandas (pandas 1.5 wants xlrd 2; the kernel lets it use Debian's 1.2).
const PROBE = `
import importlib.util, json
from analyst_compat import packaged_xlrd
found = {m: importlib.util.find_spec(m) is not None for m in ['pandas', 'openpyxl', 'pyarrow', 'fastparquet', 'xlrd', 'odf']}
found['xlrdVersion'] = packaged_xlrd() if found['xlrd'] else None
print(json.dumps(found))
`

/** The state of a reader that needs a module: ok, or what is missing and how to get it here. */
function moduleReader(
  format: string,
  reader: string,
  module: 'openpyxl' | 'xlrd',
  found: boolean,
): ReaderCheck {
  if (found) return { format, ok: true, detail: reader }
  const { fix, note } = moduleFix(MODULE_SOURCES[module], systemPackages({ askApt: true }))
  return { format, ok: false, detail: `missing ${module}${note ? ` (${note})` : ''}`, fix }
}

export async function readerChecks(python: FindPython = findPython): Promise<ReaderCheck[]> {
  let modules: Record<string, boolean | string | null>
  try {
    const { executable } = await python()
    const { stdout } = await run(executable, ['-s', '-c', PROBE], {
      timeout: 15_000,
      env: { PATH: '/usr/bin:/bin', PYTHONPATH: PYLIB_DIR, PYTHONDONTWRITEBYTECODE: '1' },
    })
    modules = JSON.parse(stdout) as Record<string, boolean | string | null>
  } catch (error) {
    return [{ format: 'all', ok: false, detail: `no Python with pandas: ${(error as Error).message}` }]
  }
  const parquet = modules.pyarrow ? 'pyarrow' : modules.fastparquet ? 'fastparquet' : undefined
  const xls =
    modules.xlrd && !modules.xlrdVersion
      ? {
          format: 'Excel .xls',
          ok: false,
          detail: 'the xlrd installed is too old for pandas: 1.2 or newer reads .xls',
        }
      : moduleReader(
          'Excel .xls',
          `pd.read_excel with xlrd ${modules.xlrdVersion}`,
          'xlrd',
          modules.xlrd === true,
        )
  return [
    { format: 'CSV, TSV (plain, gzip, zip)', ok: modules.pandas === true, detail: 'pd.read_csv' },
    { format: 'JSON, NDJSON', ok: modules.pandas === true, detail: 'pd.read_json' },
    moduleReader('Excel .xlsx', 'pd.read_excel with openpyxl', 'openpyxl', modules.openpyxl === true),
    xls,
    {
      format: 'Parquet',
      ok: true,
      detail: parquet
        ? `pd.read_parquet with ${parquet}`
        : 'no pyarrow: Analyst converts Parquet files to pandas pickles (pd.read_pickle) before the sandbox gets them',
    },
  ]
}
