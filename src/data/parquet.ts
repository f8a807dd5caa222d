/**
 * Parquet, read in Node with hyparquet: the row count and types from the file's metadata, the
 * statistics from its first rows.
 *
 * Debian's pandas has no pyarrow (nor fastparquet), so `pd.read_parquet` fails in the sandbox. When
 * the sandbox's Python lacks both, the profile names a converted copy instead: `prepareForSandbox`
 * writes `<name>.pkl`, a pandas pickle made by the same pandas the sandbox runs, with the dtypes that
 * `pd.read_parquet` (pyarrow) would give: int64/int32 (float64 when a column has nulls), float32/64,
 * bool (object with nulls), object for text, dates and nested values, datetime64[ns] (tz UTC when the
 * file says so) for timestamps; decimals become float64. A pickle keeps every dtype, unlike CSV, and
 * is safe here because Analyst wrote it. The profile's `readCall` is then `pd.read_pickle(...)`.
 * @module
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdir, rename, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import {
  asyncBufferFromFile,
  type FileMetaData,
  parquetMetadataAsync,
  parquetReadObjects,
  type SchemaElement,
} from 'hyparquet'
import { compressors } from 'hyparquet-compressors'
import { InvalidArgumentError } from '../errors.js'
import { type FindPython, findPython } from '../python.js'
import { ColumnAccumulator } from './columns.js'
import { py, thousands } from './python-literal.js'
import type { Cell, ColumnProfile, DatasetProfile, ProfileOptions } from './types.js'

const SAMPLE_ROWS = 50_000
const BATCH_ROWS = 100_000

type Kind = 'int' | 'float' | 'bool' | 'string' | 'timestamp' | 'date' | 'decimal' | 'bytes' | 'nested'

interface ParquetColumn {
  name: string
  kind: Kind
  dtype: string
  nulls?: number
}

function integerDtype(element: SchemaElement): string {
  const logical = element.logical_type
  if (logical?.type === 'INTEGER') return `${logical.isSigned ? 'int' : 'uint'}${logical.bitWidth}`
  const converted = element.converted_type
  if (converted?.startsWith('UINT_')) return `uint${converted.slice(5)}`
  if (converted?.startsWith('INT_')) return `int${converted.slice(4)}`
  return element.type === 'INT32' ? 'int32' : 'int64'
}

/** The pandas dtype pyarrow's to_pandas gives a column of this schema element. */
function columnType(element: SchemaElement, hasNulls: boolean): { kind: Kind; dtype: string } {
  const logical = element.logical_type
  const converted = element.converted_type
  if ((element.num_children ?? 0) > 0 || element.repetition_type === 'REPEATED')
    return { kind: 'nested', dtype: 'object' }
  if (
    logical?.type === 'TIMESTAMP' ||
    converted === 'TIMESTAMP_MILLIS' ||
    converted === 'TIMESTAMP_MICROS' ||
    element.type === 'INT96'
  ) {
    const utc = logical?.type === 'TIMESTAMP' && logical.isAdjustedToUTC
    return { kind: 'timestamp', dtype: utc ? 'datetime64[ns, UTC]' : 'datetime64[ns]' }
  }
  if (logical?.type === 'DATE' || converted === 'DATE') return { kind: 'date', dtype: 'object' }
  if (logical?.type === 'DECIMAL' || converted === 'DECIMAL') return { kind: 'decimal', dtype: 'float64' }
  switch (element.type) {
    case 'BOOLEAN':
      return { kind: 'bool', dtype: hasNulls ? 'object' : 'bool' }
    case 'INT32':
    case 'INT64':
      return { kind: 'int', dtype: hasNulls ? 'float64' : integerDtype(element) }
    case 'FLOAT':
      return { kind: 'float', dtype: 'float32' }
    case 'DOUBLE':
      return { kind: 'float', dtype: 'float64' }
    case 'BYTE_ARRAY':
    case 'FIXED_LEN_BYTE_ARRAY': {
      const text =
        logical?.type === 'STRING' ||
        logical?.type === 'JSON' ||
        logical?.type === 'ENUM' ||
        converted === 'UTF8'
      return { kind: text ? 'string' : 'bytes', dtype: 'object' }
    }
    default:
      return { kind: 'nested', dtype: 'object' }
  }
}

/** The top-level columns and, where the statistics say, their null counts. */
function columnsOf(metadata: FileMetaData): { element: SchemaElement; nulls?: number }[] {
  const schema = metadata.schema
  const top: { element: SchemaElement; leaf: number }[] = []
  // Walk the flattened schema tree: children of the root are the columns.
  let index = 1
  const skip = (i: number): number => {
    const children = schema[i]?.num_children ?? 0
    let next = i + 1
    for (let c = 0; c < children; c++) next = skip(next)
    return next
  }
  let leaf = 0
  const leaves = (i: number): number => {
    const children = schema[i]?.num_children ?? 0
    if (children === 0) return 1
    let n = 0
    let next = i + 1
    for (let c = 0; c < children; c++) {
      n += leaves(next)
      next = skip(next)
    }
    return n
  }
  for (let c = 0; c < (schema[0]?.num_children ?? 0); c++) {
    const element = schema[index] as SchemaElement
    top.push({ element, leaf })
    leaf += leaves(index)
    index = skip(index)
  }
  return top.map(({ element, leaf: l }) => {
    if ((element.num_children ?? 0) > 0) return { element }
    let nulls = 0
    for (const group of metadata.row_groups) {
      const count = group.columns[l]?.meta_data?.statistics?.null_count
      if (count === undefined) return { element }
      nulls += Number(count)
    }
    return { element, nulls }
  })
}

function iso(value: unknown): string | null {
  if (value instanceof Date)
    return Number.isNaN(value.getTime()) ? null : value.toISOString().replace(/\.000Z$/, 'Z')
  return value === null || value === undefined ? null : String(value)
}

function toCell(value: unknown, kind: Kind): Cell {
  if (value === null || value === undefined) return null
  if (typeof value === 'bigint') return Number(value)
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string') return value
  if (value instanceof Date) return iso(value)
  if (value instanceof Uint8Array) return `b'${Buffer.from(value).toString('latin1').slice(0, 40)}'`
  if (kind === 'nested') return JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? Number(v) : v))
  return String(value)
}

const parquetChecks = new WeakMap<FindPython, Promise<boolean>>()

/** Whether the sandbox's Python reads Parquet itself (pyarrow or fastparquet). */
export function sandboxReadsParquet(python: FindPython = findPython): Promise<boolean> {
  let check = parquetChecks.get(python)
  if (!check) {
    check = python()
      .then((info) => info.modules.pyarrow === true || info.modules.fastparquet === true)
      .catch(() => false)
    parquetChecks.set(python, check)
  }
  return check
}

export async function profileParquet(base: DatasetProfile, options: ProfileOptions): Promise<DatasetProfile> {
  const file = await asyncBufferFromFile(base.path)
  let metadata: FileMetaData
  try {
    metadata = await parquetMetadataAsync(file)
  } catch (error) {
    return {
      ...base,
      error: `Not a readable Parquet file (${(error as Error).message}). It may be corrupt or cut short.`,
    }
  }
  options.signal?.throwIfAborted()
  const rows = Number(metadata.num_rows)
  const described = columnsOf(metadata)
  const sampleEnd = Math.min(rows, SAMPLE_ROWS)
  const objects =
    sampleEnd > 0
      ? await parquetReadObjects({ file, metadata, rowStart: 0, rowEnd: sampleEnd, compressors })
      : []
  const warnings = [...base.warnings]
  const columns: ColumnProfile[] = []
  const parquetColumns: ParquetColumn[] = []
  for (const { element, nulls } of described) {
    const sampleNulls = objects.reduce(
      (n, row) => (row[element.name] === null || row[element.name] === undefined ? n + 1 : n),
      0,
    )
    const knownNulls = nulls ?? (sampleEnd === rows ? sampleNulls : undefined)
    const { kind, dtype } = columnType(element, (knownNulls ?? sampleNulls) > 0)
    parquetColumns.push({ name: element.name, kind, dtype, nulls: knownNulls })
    const accumulator = new ColumnAccumulator(element.name, dtype)
    let min: string | undefined
    let max: string | undefined
    for (const row of objects) {
      const cell = toCell(row[element.name], kind)
      if ((kind === 'timestamp' || kind === 'date') && typeof cell === 'string') {
        if (min === undefined || cell < min) min = cell
        if (max === undefined || cell > max) max = cell
      }
      accumulator.add(
        kind === 'bool' || kind === 'int' || kind === 'float' || kind === 'decimal'
          ? cell
          : cell === null
            ? null
            : String(cell),
      )
    }
    const { profile, warnings: columnWarnings } = accumulator.finish({ distinctEstimated: sampleEnd < rows })
    if (knownNulls !== undefined) profile.nulls = knownNulls
    if (min !== undefined && max !== undefined) {
      profile.dates = { min, max, asText: false }
      delete profile.top
    } else warnings.push(...columnWarnings)
    if (kind === 'decimal')
      warnings.push(`${py(element.name)} is a decimal column: the sandbox gets it as float64.`)
    columns.push(profile)
  }
  const sampleRows = objects.slice(0, 5).map((row) => {
    const out: Record<string, Cell> = {}
    parquetColumns.forEach((c) => {
      out[c.name] = toCell(row[c.name], c.kind)
    })
    return out
  })
  const native = await sandboxReadsParquet(options.python)
  const name = native ? base.name : `${base.name}.pkl`
  if (!native) {
    warnings.push(
      `The sandbox's pandas cannot read Parquet (no pyarrow), so it gets a pickled copy with the same dtypes: read it with pd.read_pickle(${py(`data/${name}`)}).`,
    )
  }
  if (sampleEnd < rows) warnings.push(`Statistics come from the first ${thousands(sampleEnd)} of the rows.`)
  return {
    ...base,
    name,
    rows,
    ...(sampleEnd < rows ? { sampled: true } : {}),
    columns,
    sampleRows,
    warnings,
    readCall: native ? `pd.read_parquet(${py(`data/${name}`)})` : `pd.read_pickle(${py(`data/${name}`)})`,
  }
}

const CONVERT = `
import datetime, json, sys
import numpy as np
import pandas as pd
header = json.loads(sys.stdin.readline())
columns = header['columns']
frames = []
for line in sys.stdin:
    data = json.loads(line)
    frames.append(pd.DataFrame({c['name']: pd.Series(data[c['name']], dtype=object) for c in columns}))
df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({c['name']: pd.Series([], dtype=object) for c in columns})
for c in columns:
    name, kind, dtype = c['name'], c['kind'], c['dtype']
    s = df[name]
    if kind == 'timestamp':
        s = pd.to_datetime(s.astype('float64'), unit='ms')
        if dtype.endswith('UTC]'):
            s = s.dt.tz_localize('UTC')
    elif kind == 'date':
        s = s.map(lambda v: None if v is None else datetime.date.fromisoformat(v[:10]))
    elif kind == 'bytes':
        s = s.map(lambda v: None if v is None else bytes.fromhex(v))
    elif dtype == 'object':
        pass
    elif dtype == 'bool':
        s = s.astype(bool)
    else:
        s = s.astype('float64') if dtype.startswith('float') or s.isna().any() else s.map(int)
        s = s.astype(dtype)
    df[name] = s
df.to_pickle(header['out'])
print(json.dumps({'rows': int(len(df)), 'dtypes': [str(d) for d in df.dtypes]}))
`

function wire(value: unknown, kind: Kind): unknown {
  if (value === null || value === undefined) return null
  if (kind === 'timestamp') return value instanceof Date ? value.getTime() : Number(value)
  if (kind === 'date') return iso(value)
  if (kind === 'bytes') return value instanceof Uint8Array ? Buffer.from(value).toString('hex') : null
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString()
  if (kind === 'nested' && typeof value === 'object') return toCell(value, kind)
  return value
}

/** Where converted copies live: a folder per source file version, so an unchanged file converts once. */
async function cachePath(path: string, name: string): Promise<string> {
  const info = await stat(path)
  const key = createHash('sha256').update(`${path}\0${info.size}\0${info.mtimeMs}`).digest('hex').slice(0, 16)
  const dir = join(tmpdir(), 'analyst-data', key)
  await mkdir(dir, { recursive: true })
  return join(dir, name)
}

/** Writes the pickled copy of a Parquet file that a profile names; returns its path. */
export async function convertParquet(
  profile: DatasetProfile,
  signal?: AbortSignal,
  python: FindPython = findPython,
): Promise<string> {
  const out = await cachePath(profile.path, profile.name)
  if (await stat(out).catch(() => undefined)) return out
  const file = await asyncBufferFromFile(profile.path)
  const metadata = await parquetMetadataAsync(file)
  const rows = Number(metadata.num_rows)
  const columns = columnsOf(metadata).map(({ element }, i) => {
    const profiled = profile.columns[i]
    const { kind, dtype } = columnType(element, false)
    return { name: element.name, kind, dtype: profiled?.dtype ?? dtype }
  })
  const interpreter = await python()
  const partial = `${out}.${process.pid}.partial`
  const child = spawn(interpreter.executable, ['-s', '-c', CONVERT], {
    env: { PATH: '/usr/bin:/bin', OPENBLAS_NUM_THREADS: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
    signal,
  })
  const stdout: Buffer[] = []
  const stderr: Buffer[] = []
  child.stdout.on('data', (c: Buffer) => stdout.push(c))
  child.stderr.on('data', (c: Buffer) => stderr.push(c))
  const done = new Promise<number>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => resolve(code ?? 1))
  })
  const write = (line: string) =>
    new Promise<void>((resolve, reject) =>
      child.stdin.write(line, (error) => (error ? reject(error) : resolve())),
    )
  try {
    await write(`${JSON.stringify({ columns, out: partial })}\n`)
    for (let start = 0; start < rows; start += BATCH_ROWS) {
      const batch = await parquetReadObjects({
        file,
        metadata,
        rowStart: start,
        rowEnd: Math.min(rows, start + BATCH_ROWS),
        compressors,
      })
      const data: Record<string, unknown[]> = {}
      for (const c of columns) data[c.name] = batch.map((row) => wire(row[c.name], c.kind))
      await write(`${JSON.stringify(data)}\n`)
    }
  } finally {
    child.stdin.end()
  }
  const code = await done
  if (code !== 0) {
    const detail = Buffer.concat(stderr).toString('utf8').trim().split('\n').pop()
    throw new InvalidArgumentError(`Converting ${basename(profile.path)} for the sandbox failed: ${detail}`, {
      hint: 'Check that the Parquet file is whole, or save it as CSV.',
    })
  }
  await rename(partial, out)
  return out
}
