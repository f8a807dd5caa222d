/**
 * Profiles the formats whose pandas reader has rules of its own (JSON, NDJSON, Excel workbooks) by
 * running pandas itself, in one Python process for all of them: what it reports is what the
 * sandbox's `pd.read_json` / `pd.read_excel` will give, since both use the same interpreter.
 *
 * This is the host's Python reading data files (no user code runs), outside the sandbox, with an
 * empty environment. The script is inline so that the build needs no asset copying.
 * @module
 */
import { spawn } from 'node:child_process'
import { type FindPython, findPython, PYLIB_DIR } from '../python.js'
import type { Cell, ColumnProfile, SheetProfile } from './types.js'

export interface PandasJob {
  kind: 'json' | 'ndjson' | 'excel'
  /** The host path to read; or `text`, a sample of it. */
  path?: string
  text?: string
  compression?: 'gzip' | 'zip'
  /** Workbooks: read at most this many rows of each sheet (and estimate the rest). */
  nrows?: number
  /** An old .xls workbook (read with xlrd). */
  xls?: boolean
}

export interface PandasResult {
  rows?: number
  rowsEstimated?: boolean
  columns?: ColumnProfile[]
  sampleRows?: Record<string, Cell>[]
  warnings?: string[]
  sheets?: SheetProfile[]
  error?: string
  /** The Python module whose absence caused `error`. */
  missing?: string
}

const SCRIPT = String.raw`
import io, json, math, re, sys, warnings
warnings.simplefilter('ignore')
import numpy as np
import pandas as pd
from analyst_compat import allow_packaged_xlrd
allow_packaged_xlrd()

SENTINELS = {-9999999, -999999, -99999, -9999, -999, -99, 999, 9999, 99999, 999999, 9999999}
NUMBER = re.compile(r'^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$')
DATE = re.compile(r'^(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.](\d{4}|\d{2}))([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?.*)?$')

def cell(v):
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if math.isnan(v) else (float(v) if math.isfinite(v) else str(v))
    if isinstance(v, pd.Timestamp):
        return None if pd.isna(v) else v.isoformat()
    if v is pd.NaT:
        return None
    if isinstance(v, str):
        return v
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return str(v)

def rnd(x):
    x = float(x)
    if not math.isfinite(x) or x == int(x):
        return x if math.isfinite(x) else None
    return float('%.6g' % x)

def q(name):
    return repr(str(name))

def column(name, s, out_warnings):
    dtype = str(s.dtype)
    nonnull = s.dropna()
    col = {'name': str(name), 'dtype': dtype, 'nulls': int(s.isna().sum())}
    try:
        col['distinct'] = int(nonnull.nunique())
    except TypeError:
        col['distinct'] = int(nonnull.astype(str).nunique())
    samples = []
    seen = set()
    for v in nonnull.head(200):
        key = repr(v)
        if key in seen:
            continue
        seen.add(key)
        samples.append(cell(v))
        if len(samples) == 3:
            break
    col['samples'] = samples
    kind = s.dtype.kind
    if kind in 'iuf' and len(nonnull):
        col['min'] = rnd(nonnull.min()); col['max'] = rnd(nonnull.max()); col['mean'] = rnd(nonnull.mean())
        for extreme in {nonnull.min(), nonnull.max()}:
            if extreme in SENTINELS:
                others = nonnull[nonnull != extreme]
                largest = float(others.abs().max()) if len(others) else 0.0
                if abs(extreme) >= 10 * max(1.0, largest) or (extreme < 0 and (others >= 0).all()):
                    n = int((nonnull == extreme).sum())
                    out_warnings.append('%s has %s in %d row%s, likely a code for a missing value: replace it with NaN' % (q(name), int(extreme), n, '' if n == 1 else 's'))
    elif kind == 'M' and len(nonnull):
        col['dates'] = {'min': nonnull.min().isoformat(), 'max': nonnull.max().isoformat(), 'asText': False}
    elif kind in 'bO' and len(nonnull):
        try:
            counts = nonnull.value_counts().head(5)
            col['top'] = [{'value': str(k), 'count': int(v)} for k, v in counts.items()]
        except TypeError:
            counts = nonnull.astype(str).value_counts().head(5)
            col['top'] = [{'value': str(k), 'count': int(v)} for k, v in counts.items()]
        if kind == 'O':
            types = nonnull.map(type)
            strs = nonnull[types == str]
            nums = int(nonnull.map(lambda v: isinstance(v, (int, float, np.number)) and not isinstance(v, bool)).sum())
            if nums and len(strs):
                out_warnings.append('%s mixes numbers (%d) and text (%d, e.g. %s): pd.to_numeric(df[%s], errors=\'coerce\') turns the text into NaN' % (q(name), nums, len(strs), json.dumps(str(strs.iloc[0])[:30]), q(name)))
            elif len(strs) == len(nonnull):
                sample = strs.head(2000)
                numeric = int(sample.str.match(NUMBER).sum())
                dates = int(sample.str.match(DATE).sum())
                if dates >= 0.95 * len(sample):
                    parsed = pd.to_datetime(strs, errors='coerce')
                    if parsed.notna().any():
                        col['dates'] = {'min': parsed.min().isoformat(), 'max': parsed.max().isoformat(), 'asText': True}
                        out_warnings.append('%s holds dates as text (%s … %s): convert with pd.to_datetime(df[%s])' % (q(name), col['dates']['min'][:10], col['dates']['max'][:10], q(name)))
                elif numeric == len(sample):
                    out_warnings.append('%s holds numbers stored as text: convert with pd.to_numeric(df[%s])' % (q(name), q(name)))
                elif numeric >= 0.5 * len(sample):
                    out_warnings.append('%s is mostly numbers (%d%%) but has text, so pandas keeps it as object: pd.to_numeric(df[%s], errors=\'coerce\')' % (q(name), round(100 * numeric / len(sample)), q(name)))
    return col

def frame(df):
    w = []
    names = [str(c) for c in df.columns]
    cols = [column(name, df.iloc[:, i], w) for i, name in enumerate(names)]
    if len(set(names)) < len(names):
        w.append('Duplicate column names: select them by position (df.iloc[:, i]).')
    rows = []
    for rec in df.head(5).itertuples(index=False, name=None):
        rows.append({names[i]: cell(v) for i, v in enumerate(rec)})
    return {'rows': int(len(df)), 'columns': cols, 'sampleRows': rows, 'warnings': w}

def source(job):
    if job.get('text') is not None:
        return io.StringIO(job['text'])
    return job['path']

def run(job):
    kind = job['kind']
    comp = job.get('compression') or 'infer'
    if kind == 'json':
        return frame(pd.read_json(source(job), compression=comp if job.get('path') else None))
    if kind == 'ndjson':
        return frame(pd.read_json(source(job), lines=True, compression=comp if job.get('path') else None))
    if kind == 'excel':
        nrows = job.get('nrows')
        books = pd.read_excel(job['path'], sheet_name=None, nrows=nrows)
        sheets = []
        totals = {}
        if nrows and job.get('xls'):
            import xlrd
            wb = xlrd.open_workbook(job['path'], on_demand=True)
            totals = {ws.name: max(0, ws.nrows - 1) for ws in wb.sheets()}
        elif nrows:
            import openpyxl
            wb = openpyxl.load_workbook(job['path'], read_only=True)
            totals = {ws.title: max(0, (ws.max_row or 1) - 1) for ws in wb.worksheets}
        for name, df in books.items():
            p = frame(df)
            p['name'] = str(name)
            if nrows and len(df) >= nrows:
                p['rows'] = max(len(df), totals.get(name, len(df)))
                p['rowsEstimated'] = True
            sheets.append(p)
        return {'sheets': sheets}
    raise ValueError('unknown kind ' + kind)

def main():
    jobs = json.load(sys.stdin)
    out = []
    for job in jobs:
        try:
            out.append(run(job))
        except ImportError as e:
            # A reader pandas needs is missing (or too old): say which, the host gives the fix.
            out.append({'error': str(e).strip().splitlines()[0][:300], 'missing': getattr(e, 'name', None) or ('xlrd' if job.get('xls') else None)})
        except Exception as e:
            out.append({'error': '%s: %s' % (type(e).__name__, str(e).strip().splitlines()[0][:300] if str(e).strip() else '')})
    sys.stdout.write(json.dumps(out, allow_nan=False, default=str))

main()
`

/** How long pandas may take over one batch of files before it is stopped (a huge workbook, say). */
export const PANDAS_TIMEOUT_MS = 120_000

/** Runs pandas over the jobs, in one process; one result per job, in order. */
export async function profileWithPandas(
  jobs: PandasJob[],
  signal?: AbortSignal,
  timeoutMs = PANDAS_TIMEOUT_MS,
  python: FindPython = findPython,
): Promise<PandasResult[]> {
  if (jobs.length === 0) return []
  let executable: string
  try {
    executable = (await python()).executable
  } catch (error) {
    const message = `No Python with pandas found to read this format (${(error as Error).message}). Run analyst doctor.`
    return jobs.map(() => ({ error: message }))
  }
  return new Promise((resolve) => {
    const child = spawn(executable, ['-s', '-c', SCRIPT], {
      env: {
        PATH: '/usr/bin:/bin',
        PYTHONDONTWRITEBYTECODE: '1',
        OPENBLAS_NUM_THREADS: '1',
        // analyst_compat: pandas reads what the sandbox's pandas reads.
        PYTHONPATH: PYLIB_DIR,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
      signal,
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    })
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk))
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk))
    const fail = (message: string) => resolve(jobs.map(() => ({ error: message })))
    child.on('error', (error) => fail(`pandas could not be run: ${error.message}`))
    child.on('close', (code, killed) => {
      if (killed === 'SIGKILL' && !signal?.aborted) {
        return fail(
          `pandas took longer than ${timeoutMs < 1000 ? timeoutMs / 1000 : Math.round(timeoutMs / 1000)} s to read the file and was stopped. Try a smaller file, or CSV.`,
        )
      }
      if (code !== 0) {
        const detail = Buffer.concat(err).toString('utf8').trim().split('\n').pop() ?? ''
        return fail(`pandas failed while reading the file (${detail || `exit code ${code}`}).`)
      }
      try {
        resolve(JSON.parse(Buffer.concat(out).toString('utf8')) as PandasResult[])
      } catch {
        fail('pandas gave no readable answer while reading the file.')
      }
    })
    child.stdin.on('error', () => {}) // an early exit is reported by 'close'
    child.stdin.end(JSON.stringify(jobs))
  })
}
