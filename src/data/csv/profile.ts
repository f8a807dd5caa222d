/**
 * Profiles CSV and TSV text as pandas' `read_csv` will read it: the same records (see tokenize.ts),
 * the same column names (Unnamed: i, deduplicated a.1), the same implicit index, the same dtypes
 * (see infer.ts). Small files are read whole, so every number is exact; bigger ones are sampled
 * (the head, pieces spread through the file and its tail) and their rows counted or estimated.
 * @module
 */
import { ColumnAccumulator, type ColumnResult, MAX_DISTINCT } from '../columns.js'
import type { TextEncoding } from '../encoding.js'
import { call, py, thousands } from '../python-literal.js'
import type { Cell, ColumnProfile, DatasetProfile } from '../types.js'
import { DtypeTracker, isFloatText, isNA, type NumberFormat, toNumber } from './infer.js'
import { sniffDecimal, sniffDelimiter } from './sniff.js'
import { tokenize } from './tokenize.js'

const SAMPLE_ROWS = 5
const SAMPLED_DISTINCT = 10_000

export interface CsvInput {
  /** The base profile: path, name, format, bytes, compression, warnings so far. */
  base: DatasetProfile
  encoding: TextEncoding
  /** The head of the (uncompressed) content, and whether it is all of it. */
  head: Buffer
  complete: boolean
  /** The uncompressed size when known (exact or a hint): rows are estimated from it. */
  contentBytes?: number
  /** Pieces from further into the file (not line-aligned), to sample beyond the head. */
  pieces?: Buffer[]
  /** Counts every record of the file, header included, when that is cheap enough. */
  countRecords?: (delimiter: string) => Promise<number>
  /** Extra arguments the read call needs (compression), in order. */
  readArgs?: [string, string | undefined][]
  /** What pandas is given instead of 'data/<name>' (a zip member), if anything. */
  readSource?: string
}

/** pandas' names for a header: empty ones become `Unnamed: i`, repeats get `.1`, `.2`… */
export function pandasNames(header: string[]): string[] {
  const names = header.map((name, i) => (name === '' ? `Unnamed: ${i}` : name))
  const inHeader = new Set(names)
  const counts = new Map<string, number>()
  return names.map((original) => {
    let name = original
    let count = counts.get(name) ?? 0
    if (count > 0) {
      while (count > 0) {
        counts.set(original, count + 1)
        name = `${original}.${count}`
        count = inHeader.has(name) ? count + 1 : (counts.get(name) ?? 0)
      }
    }
    counts.set(name, (counts.get(name) ?? 0) + 1)
    return name
  })
}

function cut(bytes: Buffer, encoding: TextEncoding, complete: boolean, fromStart: boolean): string {
  let text = encoding.decode(bytes)
  // Lines end with \n, \r\n or a lone \r (old Mac files): pandas takes all three.
  if (!fromStart) {
    // A piece starts mid-line: drop up to the first line end.
    const first = text.search(/[\r\n]/)
    text = first === -1 ? '' : text.slice(first + 1)
  }
  if (!complete) {
    const last = Math.max(text.lastIndexOf('\n'), text.lastIndexOf('\r'))
    text = last === -1 ? '' : text.slice(0, last + 1)
  }
  return text
}

function typed(value: string, dtype: string, format: NumberFormat): Cell {
  if (dtype === 'int64' || dtype === 'uint64' || dtype === 'float64') return toNumber(value, format)
  if (dtype === 'bool') return value.trim().toLowerCase() === 'true'
  return value
}

/**
 * One column in the single pass over the records: pandas' dtype rules, the distinct raw fields with
 * their counts, and exact numeric extremes in case the fields turn out to be numbers. Records are
 * dropped as soon as they are counted, so a big sample leaves little for the garbage collector.
 */
class CsvColumn {
  readonly tracker: DtypeTracker
  private readonly counts = new Map<string, number>()
  private capped = false
  private numeric = true
  private min = Number.POSITIVE_INFINITY
  private max = Number.NEGATIVE_INFINITY
  private sum = 0
  private n = 0

  constructor(
    private readonly format: NumberFormat,
    private readonly cap: number,
  ) {
    this.tracker = new DtypeTracker(format)
  }

  add(field: string) {
    if (this.tracker.add(field)) return // missing
    const seen = this.counts.get(field)
    if (seen !== undefined) this.counts.set(field, seen + 1)
    else if (this.counts.size < this.cap) this.counts.set(field, 1)
    else this.capped = true
    if (this.numeric) {
      const value = toNumber(field, this.format)
      if (Number.isNaN(value)) this.numeric = false
      else {
        if (value < this.min) this.min = value
        if (value > this.max) this.max = value
        this.sum += value
        this.n++
      }
    }
  }

  finish(name: string, distinctEstimated: boolean): ColumnResult {
    const dtype = this.tracker.dtype
    const accumulator = new ColumnAccumulator(name, dtype, this.cap)
    if (this.tracker.nulls > 0) accumulator.add(null, this.tracker.nulls)
    for (const [field, count] of this.counts) accumulator.add(typed(field, dtype, this.format), count)
    const isNumber = dtype === 'int64' || dtype === 'uint64' || dtype === 'float64'
    return accumulator.finish({
      distinctEstimated: distinctEstimated || this.capped,
      numbers: isNumber ? { min: this.min, max: this.max, sum: this.sum, count: this.n } : undefined,
    })
  }
}

export async function profileCsv(input: CsvInput): Promise<DatasetProfile> {
  const profile: DatasetProfile = { ...input.base, encoding: input.encoding.label }
  const warnings = profile.warnings
  const headText = cut(input.head, input.encoding, input.complete, true)
  if (headText.trim() === '') {
    if (input.complete) {
      return {
        ...profile,
        error: 'The file is empty: pandas raises EmptyDataError. Check that it is the right file.',
      }
    }
    return {
      ...profile,
      error: `The first ${input.head.length} bytes hold no complete line (a single line too long to profile). Check that it is a table.`,
    }
  }
  const delimiter = sniffDelimiter(headText, input.base.format === 'tsv')
  profile.delimiter = delimiter
  // The exact count (a pass over the whole file, in a worker) runs while the sample is profiled.
  const counting = !input.complete && input.countRecords ? input.countRecords(delimiter) : undefined
  counting?.catch(() => {}) // awaited below; a failure there means an estimate instead
  const start = tokenize(headText, { delimiter, final: input.complete, maxRecords: 200 })
  if (start.records.length === 0) {
    return {
      ...profile,
      error: 'No records found: the file holds only blank lines. pandas raises EmptyDataError.',
    }
  }
  const decimal = sniffDecimal(start.records, delimiter)
  const format: NumberFormat = { decimal }

  // The header, or none when the first line is plainly data.
  const first = start.records[0] as string[]
  const hasHeader = !first.every((field) => field.trim() !== '' && isFloatText(field, format))
  if (!hasHeader) {
    warnings.push(
      'The first line holds only numbers, so it is data, not a header: read with header=None (columns are numbered 0, 1, …).',
    )
  }
  const header = hasHeader ? first : []
  const offset = hasHeader ? 1 : 0

  // pandas takes the first data line's extra leading fields as the index.
  const firstData = start.records[offset]
  const indexColumns =
    hasHeader && firstData && firstData.length > header.length ? firstData.length - header.length : 0
  const width = hasHeader ? Math.max(header.length, firstData?.length ?? 0) : first.length
  const names = hasHeader ? pandasNames(header) : first.map((_, i) => String(i))
  if (indexColumns > 0) {
    warnings.push(
      `The data lines have ${indexColumns} more field${indexColumns > 1 ? 's' : ''} than the header: pandas uses the first ${indexColumns > 1 ? `${indexColumns} fields` : 'field'} as the index, not as a column.`,
    )
  }
  if (hasHeader && new Set(header).size < header.length) {
    const repeated = [...new Set(header.filter((name, i) => name !== '' && header.indexOf(name) !== i))]
    if (repeated.length > 0) {
      warnings.push(
        `Duplicate column names in the header (${repeated.slice(0, 5).map(py).join(', ')}): pandas renames the repeats with .1, .2 (${names
          .filter((n, i) => n !== header[i] && header[i] !== '')
          .slice(0, 5)
          .map(py)
          .join(', ')}).`,
      )
    }
  }

  // One pass over the records: every column at once, each record dropped once counted.
  const sampled = !input.complete
  // A sample's distinct counts are floors anyway: a smaller cap saves time on huge files.
  const cap = sampled ? SAMPLED_DISTINCT : MAX_DISTINCT
  const columns = names.map(() => new CsvColumn(format, cap))
  const add = (record: string[]) => {
    for (let c = 0; c < columns.length; c++) (columns[c] as CsvColumn).add(record[c + indexColumns] ?? '')
  }
  const sampleRecords: string[][] = []
  let rows = 0
  let seen = 0
  // Lines with more fields than expected: pandas raises unless told to skip them.
  let badLines = 0
  let firstBad: { line: number; fields: number } | undefined
  const head = tokenize(headText, {
    delimiter,
    final: input.complete,
    onRecord: (record, line) => {
      if (seen++ < offset) return
      if (record.length > width) {
        badLines++
        firstBad ??= { line, fields: record.length }
        return
      }
      rows++
      if (sampleRecords.length < SAMPLE_ROWS) sampleRecords.push(record)
      add(record)
    },
  })
  if (head.unterminatedQuoteAt !== undefined) {
    warnings.push(
      `A quoted field opened on record ${head.unterminatedQuoteAt} never closes: pandas raises "EOF inside string". Fix the quote, or read with engine='python', quoting=3 (csv.QUOTE_NONE).`,
    )
  }
  if (firstBad) {
    warnings.push(
      `${badLines} line${badLines > 1 ? 's have' : ' has'} more fields than the ${width} expected (first: line ${firstBad.line}, ${firstBad.fields} fields): pandas raises "Error tokenizing data" unless told on_bad_lines='skip', which drops ${badLines > 1 ? 'them' : 'it'}.`,
    )
  }

  // Pieces from the rest of the file, only when records are line-aligned (no quoted line breaks).
  let pieceBytes = 0
  let pieceCount = 0
  let pieceRows = 0
  if (sampled && input.pieces && !head.quotedNewlines) {
    for (const piece of input.pieces) {
      const text = cut(piece, input.encoding, false, false)
      const { consumed } = tokenize(text, {
        delimiter,
        final: false,
        onRecord: (record) => {
          pieceCount++
          // A misaligned or odd record would mislead the types: keep only full-width ones.
          if (record.length !== width) return
          pieceRows++
          add(record)
        },
      })
      pieceBytes += byteLength(text.slice(0, consumed), input.encoding)
    }
  }

  const profiles: ColumnProfile[] = []
  const dtypes: string[] = []
  columns.forEach((column, c) => {
    const result = column.finish(names[c] as string, sampled)
    dtypes.push(result.profile.dtype)
    profiles.push(result.profile)
    warnings.push(...result.warnings)
  })
  if (names[0] === 'Unnamed: 0' && indexColumns === 0 && (dtypes[0] === 'int64' || dtypes[0] === 'object')) {
    warnings.push(
      "'Unnamed: 0' is an unnamed first column, most likely an index saved by to_csv: read with index_col=0 to use it as the index.",
    )
  }

  profile.columns = profiles
  profile.sampleRows = sampleRecords.map((record) => {
    const row: Record<string, Cell> = {}
    names.forEach((name, c) => {
      const field = record[c + indexColumns] ?? ''
      row[name] = isNA(field) ? null : typed(field, dtypes[c] as string, format)
    })
    return row
  })

  // Rows: exact when the whole file was read or counting is cheap, else estimated from the samples.
  if (input.complete) {
    profile.rows = rows
  } else {
    let counted: number | undefined
    if (counting && badLines === 0) counted = await counting.then((n) => n - offset).catch(() => undefined)
    if (counted !== undefined) profile.rows = counted
    else {
      profile.rowsEstimated = true
      const headerEnd = hasHeader ? tokenize(headText, { delimiter, maxRecords: 1 }).consumed : 0
      const headerBytes = byteLength(headText.slice(0, headerEnd), input.encoding)
      const dataBytes = byteLength(headText, input.encoding) - headerBytes
      const total = input.contentBytes ?? input.head.length
      const headRows = rows + badLines
      if (pieceCount > 0) {
        // The head is counted; the rest is estimated from pieces spread evenly through it.
        const rest = Math.max(0, total - headerBytes - dataBytes)
        profile.rows = Math.round(headRows + rest / (pieceBytes / pieceCount))
      } else {
        const perRow = headRows > 0 ? dataBytes / headRows : 1
        profile.rows = Math.max(headRows, Math.round((total - headerBytes) / perRow))
      }
    }
    profile.sampled = true
    warnings.push(
      `Statistics come from a sample of ${thousands(rows + pieceRows)} rows${profile.rowsEstimated ? '; the row count is an estimate' : ''}: dtypes can still change further into the file.`,
    )
  }

  const sep = delimiter === ',' ? undefined : py(delimiter)
  profile.readCall = call('pd.read_csv', input.readSource ?? py(`data/${profile.name}`), [
    ['sep', sep],
    ['encoding', input.encoding.python === undefined ? undefined : py(input.encoding.python)],
    ['decimal', decimal === '.' ? undefined : py(decimal)],
    ['header', hasHeader ? undefined : 'None'],
    ['on_bad_lines', badLines > 0 ? "'skip'" : undefined],
    ...(input.readArgs ?? []),
  ])
  return profile
}

function byteLength(text: string, encoding: TextEncoding): number {
  if (encoding.unit === 2) return text.length * 2
  return encoding.python === undefined ? Buffer.byteLength(text, 'utf8') : text.length
}
