/**
 * `profileFiles`: one profile per file, never a throw for a bad file (its entry says why).
 *
 * CSV and TSV are profiled in Node (csv/): starting Python and importing pandas alone takes 0.5–0.8 s
 * here, more than the whole budget for a 1 GB file, and a faithful tokenizer plus pandas' inference
 * rules give the same names, dtypes and row counts (tested against pandas on every DABench table).
 * JSON, NDJSON and Excel go to pandas itself (pandas.ts), all files in one Python process; Parquet is
 * read in Node (parquet.ts).
 *
 * How much is read (DEFAULT_LIMITS): files up to 16 MiB whole, so every number is exact. Bigger ones
 * are sampled: the first 512 KiB and 24 pieces of 16 KiB spread through the rest; their rows are
 * counted exactly by a streaming pass in a worker thread up to 128 MiB (beside the sampling), and
 * estimated above that from the pieces' bytes per row (`rowsEstimated`). Memory stays bounded by
 * those reads whatever the file's size.
 * @module
 */
import { stat } from 'node:fs/promises'
import { basename } from 'node:path'
import { MODULE_SOURCES, moduleFix, systemPackages } from '../packages.js'
import { type CsvInput, profileCsv } from './csv/profile.js'
import { detect, formatFromName, jsonKind } from './detect.js'
import { detectEncoding, looksBinary } from './encoding.js'
import type { PandasJob, PandasResult } from './pandas.js'
import { call, py, thousands } from './python-literal.js'
import { gunzipHead, gzipSizeHint, readHead, readPieces } from './source.js'
import type { DataFormat, DatasetProfile, ProfileOptions } from './types.js'

/** How much of a file is read; tests shrink these to reach the sampled paths with small files. */
export interface ProfileLimits {
  /** Files up to this size are read whole: every statistic is exact. */
  fullReadBytes: number
  /** Bigger files: the head is read, plus `pieces` pieces of `pieceBytes` spread through the rest. */
  headBytes: number
  pieces: number
  pieceBytes: number
  /** Up to this size a CSV's records are counted exactly (a streaming pass); above, estimated. */
  exactCountBytes: number
  /** Workbooks bigger than this are profiled on their first `excelSampleRows` rows. */
  excelFullBytes: number
  excelSampleRows: number
}

export const DEFAULT_LIMITS: ProfileLimits = {
  fullReadBytes: 16 * 1024 * 1024,
  headBytes: 512 * 1024,
  pieces: 24,
  pieceBytes: 16 * 1024,
  exactCountBytes: 128 * 1024 * 1024,
  excelFullBytes: 8 * 1024 * 1024,
  excelSampleRows: 5000,
}

interface Context {
  signal?: AbortSignal
  limits: ProfileLimits
}

function emptyProfile(path: string, name: string, format: DataFormat, bytes: number): DatasetProfile {
  return { path, name, format, bytes, rows: 0, columns: [], sampleRows: [], warnings: [], readCall: '' }
}

function failed(profile: DatasetProfile, error: string): DatasetProfile {
  return { ...profile, error, rows: 0, columns: [], sampleRows: [] }
}

function describe(error: unknown, path: string): string {
  const code = (error as NodeJS.ErrnoException)?.code
  if (code === 'ENOENT') return `No such file: ${path}. Check the path.`
  if (code === 'EACCES' || code === 'EPERM')
    return `Permission denied reading ${path}. Check the file's permissions.`
  if (code === 'EISDIR') return `${path} is a folder, not a file. Give the data files inside it.`
  if (code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR')
    return `${path} is not valid gzip data (corrupt or cut short).`
  const message = error instanceof Error ? error.message : String(error)
  return `Could not read ${path}: ${message}`
}

interface Pending {
  index: number
  job: PandasJob
  profile: DatasetProfile
}

/** A data file: its host path, and optionally the name it gets in the sandbox (default: its base name). */
export type DataFile = string | { path: string; name: string }

/**
 * One profile per file, in order. Never throws for a bad file: its entry carries an `error`. A file
 * given with a name is profiled under that name (`data/<name>` in every read call), and its format
 * is told by that name's extension and the file's content.
 */
export async function profileFiles(
  files: DataFile[],
  options: ProfileOptions & { limits?: Partial<ProfileLimits> } = {},
): Promise<DatasetProfile[]> {
  const context: Context = { signal: options.signal, limits: { ...DEFAULT_LIMITS, ...options.limits } }
  const results: DatasetProfile[] = []
  const pending: Pending[] = []
  for (const file of files) {
    options.signal?.throwIfAborted()
    const path = typeof file === 'string' ? file : file.path
    const name = typeof file === 'string' ? basename(path) : file.name
    const index = results.length
    try {
      const outcome = await profileOne(path, name, context)
      if ('job' in outcome) {
        pending.push({ index, job: outcome.job, profile: outcome.profile })
        results.push(outcome.profile)
      } else results.push(outcome)
    } catch (error) {
      if (options.signal?.aborted) throw error
      results.push(
        failed(
          emptyProfile(path, name, (formatFromName(name) ?? 'unknown') as DataFormat, 0),
          describe(error, path),
        ),
      )
    }
  }
  const names = new Map<string, number>()
  for (const profile of results) names.set(profile.name, (names.get(profile.name) ?? 0) + 1)
  for (const profile of results) {
    if ((names.get(profile.name) ?? 0) > 1) {
      profile.warnings.push(
        `Another file given is also named ${profile.name}: in the sandbox both would be data/${profile.name}. Rename one of them.`,
      )
    }
  }
  if (pending.length > 0) {
    const { profileWithPandas } = await import('./pandas.js')
    const answers = await profileWithPandas(
      pending.map((p) => p.job),
      options.signal,
      undefined,
      options.python,
    )
    pending.forEach((p, i) => {
      results[p.index] = mergePandas(
        p.profile,
        answers[i] ?? { error: 'pandas gave no answer for this file.' },
      )
    })
  }
  return results
}

function mergePandas(profile: DatasetProfile, answer: PandasResult): DatasetProfile {
  if (answer.missing && answer.missing in MODULE_SOURCES) {
    return failed(profile, missingReader(answer.missing as keyof typeof MODULE_SOURCES, answer.error))
  }
  if (answer.error) return failed(profile, `pandas cannot read it: ${answer.error}`)
  if (answer.sheets) {
    const sheets = answer.sheets.map((sheet, i) => ({
      ...sheet,
      readCall: call('pd.read_excel', py(`data/${profile.name}`), [
        ['sheet_name', i === 0 ? undefined : py(sheet.name)],
      ]),
    }))
    const first = sheets[0]
    if (!first) return failed(profile, 'The workbook has no sheets.')
    const warnings = [...profile.warnings]
    if (sheets.length > 1) {
      warnings.push(
        `${sheets.length} sheets (${sheets.map((s) => py(s.name)).join(', ')}): pd.read_excel(${py(`data/${profile.name}`)}, sheet_name=None) gives a dict of them all.`,
      )
    }
    return {
      ...profile,
      rows: first.rows,
      ...(first.rowsEstimated ? { rowsEstimated: true, sampled: true } : {}),
      columns: first.columns,
      sampleRows: first.sampleRows,
      warnings: [...warnings, ...first.warnings],
      readCall: first.readCall,
      sheets,
    }
  }
  return {
    ...profile,
    rows: profile.rowsEstimated || profile.sampled ? profile.rows : (answer.rows ?? 0),
    columns: answer.columns ?? [],
    sampleRows: answer.sampleRows ?? [],
    warnings: [...profile.warnings, ...(answer.warnings ?? [])],
  }
}

/** The sandbox's pandas lacks the reader for this file: what to do about it on this machine. */
function missingReader(module: keyof typeof MODULE_SOURCES, error?: string): string {
  const source = MODULE_SOURCES[module]
  const { fix, note } = moduleFix(source, systemPackages())
  const what = module === 'xlrd' ? 'an old Excel .xls workbook' : 'a workbook'
  const instead = module === 'xlrd' ? 'save it as .xlsx (or CSV)' : 'save it as CSV'
  return `This is ${what}, and the sandbox's pandas cannot read it without ${module} (${error ?? 'missing'}). ${
    fix ? `Install it: ${fix}; or ${instead}.` : `${note ?? `Or ${instead}`}.`
  }`
}

type Outcome = DatasetProfile | { job: PandasJob; profile: DatasetProfile }

async function profileOne(path: string, name: string, options: Context): Promise<Outcome> {
  const L = options.limits
  const info = await stat(path)
  if (info.isDirectory()) throw Object.assign(new Error('is a folder'), { code: 'EISDIR' })
  if (!info.isFile()) {
    // A pipe, socket or device: reading it could block forever.
    return failed(
      emptyProfile(path, name, 'unknown', 0),
      `${path} is not a regular file (a pipe or device). Give a data file.`,
    )
  }
  const head = await readHead(path, info.size <= L.fullReadBytes ? L.fullReadBytes : L.headBytes)
  const detected = detect(name, head.bytes)
  const base = emptyProfile(
    path,
    name,
    detected.format === 'xls' ? 'excel' : detected.format === 'binary' ? 'unknown' : detected.format,
    info.size,
  )
  if (info.size === 0) {
    return failed(
      base,
      'The file is empty (0 bytes): there is nothing to read. Check that it is the right file.',
    )
  }
  const outcome = await profileDetected(path, name, info.size, head, detected, base, options)
  const after = await stat(path).catch(() => undefined)
  if (!after || after.size !== info.size || after.mtimeMs !== info.mtimeMs) {
    const profile = 'job' in outcome ? outcome.profile : outcome
    profile.warnings.push(
      'The file changed while it was being read: the profile may not match what pandas will see. Profile it again once it is written.',
    )
  }
  return outcome
}

async function profileDetected(
  path: string,
  name: string,
  size: number,
  head: Awaited<ReturnType<typeof readHead>>,
  detected: ReturnType<typeof detect>,
  base: DatasetProfile,
  options: Context,
): Promise<Outcome> {
  const L = options.limits

  switch (detected.format) {
    case 'xls':
    case 'excel': {
      // pandas picks its reader by the content: openpyxl for .xlsx, xlrd for .xls.
      const profile = { ...base, format: 'excel' as const }
      return {
        profile,
        job: {
          kind: 'excel',
          path,
          nrows: size > L.excelFullBytes ? L.excelSampleRows : undefined,
          xls: detected.format === 'xls',
        },
      }
    }
    case 'binary':
      return failed(
        base,
        `The file is named like ${formatFromName(name)} but its content is not: it may be corrupt or mislabeled.`,
      )
    case 'parquet':
      return (await import('./parquet.js')).profileParquet({ ...base, format: 'parquet' }, options)
    default:
  }

  if (detected.compression === 'zip') return profileZip(path, base, L)
  if (detected.compression === 'gzip') return profileGzip(path, base, detected.format as DataFormat, options)

  const format = detected.format as DataFormat
  if (format === 'json' || format === 'ndjson') {
    return jsonOutcome({ ...base, format }, head.bytes, head.complete, size, path, L)
  }
  return profileText({ ...base, format }, head.bytes, head.complete, L, {
    contentBytes: size,
    pieces: async () => {
      const offsets: number[] = []
      const span = size - L.headBytes - L.pieceBytes
      for (let i = 1; i <= L.pieces; i++) offsets.push(L.headBytes + Math.floor((span * i) / L.pieces))
      return readPieces(path, offsets, L.pieceBytes)
    },
    countRecords:
      size <= L.exactCountBytes
        ? async (delimiter) =>
            (await import('./csv/count-worker.js')).countRecordsInWorker(path, delimiter, options.signal)
        : undefined,
  })
}

interface TextExtras {
  contentBytes?: number
  pieces?: () => Promise<Buffer[]>
  countRecords?: (delimiter: string) => Promise<number>
  readArgs?: [string, string | undefined][]
  readSource?: string
}

async function profileText(
  base: DatasetProfile,
  bytes: Buffer,
  complete: boolean,
  limits: ProfileLimits,
  extras: TextExtras,
): Promise<DatasetProfile> {
  const encoding = detectEncoding(bytes, complete)
  if (looksBinary(bytes, encoding)) {
    return failed(
      base,
      `This is a binary file, not ${base.format === 'tsv' ? 'TSV' : 'CSV'} text (it holds NUL or control bytes). Check that it is the right file, or export the data as CSV.`,
    )
  }
  const head = complete ? bytes : bytes.subarray(0, limits.headBytes)
  const input: CsvInput = {
    base,
    encoding,
    head,
    complete,
    contentBytes: extras.contentBytes,
    readArgs: extras.readArgs,
    readSource: extras.readSource,
  }
  if (!complete && extras.pieces && encoding.unit === 1) input.pieces = await extras.pieces()
  // Exact counting reads one-byte text with \n line ends; UTF-16 or \r-only files are estimated.
  const crOnly = /\r(?!\n)/.test(head.subarray(0, 65536).toString('latin1'))
  if (!complete && extras.countRecords && encoding.unit === 1 && !crOnly)
    input.countRecords = extras.countRecords
  return profileCsv(input)
}

function jsonOutcome(
  base: DatasetProfile,
  bytes: Buffer,
  complete: boolean,
  contentBytes: number | undefined,
  path: string,
  limits: ProfileLimits,
  compression?: 'gzip' | 'zip',
): Outcome {
  const format = base.format as 'json' | 'ndjson'
  const lines = format === 'ndjson' ? ', lines=True' : ''
  const comp = compression && !new RegExp(`\\.${compression === 'gzip' ? 'gz' : 'zip'}$`, 'i').test(base.name)
  const profile: DatasetProfile = {
    ...base,
    readCall: `pd.read_json(${py(`data/${base.name}`)}${lines}${comp ? `, compression=${py(compression as string)}` : ''})`,
  }
  if (complete) return { profile, job: { kind: format, path, compression } }
  // A sample: whole records from the head.
  const text = bytes.subarray(0, limits.headBytes).toString('utf8')
  const sample = format === 'ndjson' ? text.slice(0, text.lastIndexOf('\n') + 1) : jsonArrayHead(text)
  if (sample === undefined || sample.trim() === '') {
    return failed(
      profile,
      'The file is too big to profile as one JSON document that is not an array of records. Convert it to NDJSON (one record per line).',
    )
  }
  const sampleRecords =
    format === 'ndjson' ? sample.split('\n').filter((l) => l.trim() !== '').length : countTopLevel(sample)
  const sampleBytes = Buffer.byteLength(sample, 'utf8')
  profile.rows = Math.round((sampleRecords * (contentBytes ?? bytes.length)) / Math.max(1, sampleBytes))
  profile.rowsEstimated = true
  profile.sampled = true
  profile.warnings.push(
    `Statistics come from the first ${thousands(sampleRecords)} records; the row count is an estimate.`,
  )
  return { profile, job: { kind: format, text: sample } }
}

/** The head of a JSON array cut after its last complete element, and closed: `[{…}, {…}]`. */
export function jsonArrayHead(text: string): string | undefined {
  const start = text.indexOf('[')
  if (start === -1 || text.slice(0, start).trim() !== '') return undefined
  let depth = 0
  let inString = false
  let lastEnd = -1
  for (let i = start; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
      continue
    }
    if (c === '"') inString = true
    else if (c === '[' || c === '{') depth++
    else if (c === ']' || c === '}') {
      depth--
      if (depth === 1) lastEnd = i
      if (depth === 0) return text.slice(start, i + 1)
    } else if (c === ',' && depth === 1) lastEnd = i - 1
  }
  return lastEnd === -1 ? undefined : `${text.slice(start, lastEnd + 1)}]`
}

function countTopLevel(arrayText: string): number {
  let depth = 0
  let inString = false
  let count = 0
  let sawValue = false
  for (let i = 0; i < arrayText.length; i++) {
    const c = arrayText[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
      continue
    }
    if (c === '"') inString = true
    if (c === '[' || c === '{') depth++
    else if (c === ']' || c === '}') depth--
    else if (c === ',' && depth === 1) count++
    if (
      depth >= 1 &&
      c !== ' ' &&
      c !== '\n' &&
      c !== '\r' &&
      c !== '\t' &&
      !(depth === 1 && (c === '[' || c === ','))
    ) {
      sawValue = true
    }
  }
  return sawValue ? count + 1 : 0
}

async function profileGzip(
  path: string,
  base: DatasetProfile,
  format: DataFormat,
  options: Context,
): Promise<Outcome> {
  const L = options.limits
  const head = await gunzipHead(path, L.fullReadBytes)
  options.signal?.throwIfAborted()
  const hint = head.complete ? head.bytes.length : await gzipSizeHint(path, base.bytes)
  const contentBytes = hint !== undefined && hint >= head.bytes.length ? hint : undefined
  const profile: DatasetProfile = { ...base, format, compression: 'gzip' }
  const byExtension = /\.gz$/i.test(base.name)
  if (format === 'json' || format === 'ndjson') {
    const kind = jsonKind(head.bytes.subarray(0, 65536).toString('utf8'), format)
    return jsonOutcome({ ...profile, format: kind }, head.bytes, head.complete, contentBytes, path, L, 'gzip')
  }
  if (format !== 'csv' && format !== 'tsv')
    return failed(profile, `A gzip-compressed ${format} file is not supported: decompress it first.`)
  return profileText(profile, head.bytes, head.complete, L, {
    contentBytes,
    readArgs: byExtension ? [] : [['compression', "'gzip'"]],
  })
}

async function profileZip(path: string, base: DatasetProfile, L: ProfileLimits): Promise<Outcome> {
  const { listZip, zipMemberHead } = await import('./zip.js')
  const members = (await listZip(path)).filter(
    (m) => !m.name.startsWith('__MACOSX/') && !basename(m.name).startsWith('.'),
  )
  if (members.length === 0) return failed(base, 'The zip archive is empty.')
  const tabular = members.filter((m) => {
    const f = formatFromName(m.name)
    return f === 'csv' || f === 'tsv' || f === 'json' || f === 'ndjson'
  })
  const member = tabular[0]
  if (!member) {
    return failed(
      base,
      `The zip archive holds no CSV, TSV or JSON file (${members
        .slice(0, 5)
        .map((m) => m.name)
        .join(', ')}). Extract it and give the files inside.`,
    )
  }
  const format = formatFromName(member.name) as DataFormat
  const profile: DatasetProfile = { ...base, format, compression: 'zip' }
  const head = await zipMemberHead(path, member.name, L.fullReadBytes)
  const single = members.length === 1
  if (!single) {
    profile.warnings.push(
      `The archive holds ${members.length} files; this profile is of ${py(member.name)}. Open another with zipfile.ZipFile(${py(`data/${base.name}`)}).open(NAME) (import zipfile).`,
    )
  }
  if (format === 'json' || format === 'ndjson') {
    if (!single)
      return failed(
        profile,
        'JSON inside a zip archive with several files: extract it and give the JSON file itself.',
      )
    const kind = jsonKind(head.bytes.subarray(0, 65536).toString('utf8'), format)
    return jsonOutcome({ ...profile, format: kind }, head.bytes, head.complete, member.size, path, L, 'zip')
  }
  const byExtension = /\.zip$/i.test(base.name)
  return profileText(profile, head.bytes, head.complete, L, {
    contentBytes: member.size,
    readSource: single ? undefined : `zipfile.ZipFile(${py(`data/${base.name}`)}).open(${py(member.name)})`,
    readArgs: single && !byExtension ? [['compression', "'zip'"]] : [],
  })
}
