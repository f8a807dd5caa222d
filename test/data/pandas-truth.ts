/**
 * pandas' own view of files (column names, dtypes, nulls, row count), computed by the real
 * interpreter the sandbox uses: the reference the profiles are checked against.
 */
import { execFileSync } from 'node:child_process'
import { PYLIB_DIR } from '../../src/python.js'

export interface PandasView {
  columns: string[]
  dtypes: string[]
  nulls: number[]
  rows: number
  error?: string
}

const SCRIPT = `
import json, sys, warnings
warnings.simplefilter('ignore')
import zipfile
import pandas as pd
from analyst_compat import allow_packaged_xlrd
allow_packaged_xlrd()  # as the kernel does: pandas reads .xls with the distribution's xlrd
out = {}
for item in json.load(sys.stdin):
    try:
        df = eval(item['call'], {'pd': pd, 'zipfile': zipfile})
        out[item['key']] = {
            'columns': [str(c) for c in df.columns],
            'dtypes': [str(d) for d in df.dtypes],
            'nulls': [int(df.iloc[:, i].isna().sum()) for i in range(df.shape[1])],
            'rows': len(df),
        }
    except Exception as e:
        out[item['key']] = {'columns': [], 'dtypes': [], 'nulls': [], 'rows': -1, 'error': type(e).__name__ + ': ' + str(e)}
print(json.dumps(out))
`

/** Evaluates each pandas call (e.g. `pd.read_csv('/abs/x.csv', sep=';')`) and returns what it read. */
export function pandasViews(calls: { key: string; call: string }[]): Record<string, PandasView> {
  const stdout = execFileSync('/usr/bin/python3', ['-s', '-c', SCRIPT], {
    input: JSON.stringify(calls),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: { PATH: '/usr/bin:/bin', PYTHONPATH: PYLIB_DIR, PYTHONDONTWRITEBYTECODE: '1' },
  })
  return JSON.parse(stdout) as Record<string, PandasView>
}

/** A profile's readCall with the sandbox folder `data/` replaced by the host folder. */
export function onHost(readCall: string, folder: string): string {
  return readCall.replace(/(['"])data\//g, `$1${folder}/`)
}
