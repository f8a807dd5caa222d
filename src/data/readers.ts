/**
 * Which pandas readers the sandbox's Python has, for `analyst doctor` and for choosing how a format
 * reaches the sandbox.
 * @module
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { type FindPython, findPython } from '../python.js'

const run = promisify(execFile)

export interface ReaderCheck {
  /** The format, as people name it. */
  format: string
  ok: boolean
  /** What reads it, or what is missing and what Analyst does instead. */
  detail: string
}

const PROBE = `
import importlib.util, json
print(json.dumps({m: importlib.util.find_spec(m) is not None for m in ['pandas', 'openpyxl', 'pyarrow', 'fastparquet', 'xlrd', 'odf']}))
`

export async function readerChecks(python: FindPython = findPython): Promise<ReaderCheck[]> {
  let modules: Record<string, boolean>
  try {
    const { executable } = await python()
    const { stdout } = await run(executable, ['-s', '-c', PROBE], {
      timeout: 15_000,
      env: { PATH: '/usr/bin:/bin' },
    })
    modules = JSON.parse(stdout) as Record<string, boolean>
  } catch (error) {
    return [{ format: 'all', ok: false, detail: `no Python with pandas: ${(error as Error).message}` }]
  }
  const parquet = modules.pyarrow ? 'pyarrow' : modules.fastparquet ? 'fastparquet' : undefined
  return [
    { format: 'CSV, TSV (plain, gzip, zip)', ok: modules.pandas === true, detail: 'pd.read_csv' },
    { format: 'JSON, NDJSON', ok: modules.pandas === true, detail: 'pd.read_json' },
    {
      format: 'Excel .xlsx',
      ok: modules.openpyxl === true,
      detail: modules.openpyxl
        ? 'pd.read_excel with openpyxl'
        : 'missing openpyxl (apt-get install python3-openpyxl)',
    },
    {
      format: 'Excel .xls',
      ok: modules.xlrd === true,
      detail: modules.xlrd ? 'pd.read_excel with xlrd' : 'missing xlrd: save old .xls workbooks as .xlsx',
    },
    {
      format: 'Parquet',
      ok: true,
      detail: parquet
        ? `pd.read_parquet with ${parquet}`
        : 'no pyarrow: Analyst converts Parquet files to pandas pickles (pd.read_pickle) before the sandbox gets them',
    },
  ]
}
