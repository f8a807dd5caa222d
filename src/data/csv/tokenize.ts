/**
 * Splits CSV text into records the way pandas' C tokenizer does (pandas/_libs/src/parser/tokenizer.c,
 * with read_csv's defaults: quotechar '"', doublequote, no escapechar, skip_blank_lines).
 *
 * A general CSV library would not do: the profile must see the fields pandas sees, and pandas differs
 * from RFC 4180 parsers in ways that change column counts and values: a quote only opens a quoted
 * field at the start of a field (`5'11"` is literal), text after a closing quote joins the field
 * (`"x"y` is `xy`), a lone `\r` ends a line, and blank or whitespace-only lines are skipped.
 * @module
 */

export interface TokenizeOptions {
  /** The field separator, one character. */
  delimiter: string
  /** Stop after this many records (the rest of the text is not read). */
  maxRecords?: number
  /**
   * True when the text ends where the file ends. When false (a chunk of a bigger file), a record cut
   * by the end of the text is dropped instead of kept.
   */
  final?: boolean
  /**
   * Called with each record (and the line it starts on) instead of collecting them: the records can
   * then be dropped as they are used, which keeps the garbage collector's work small on big samples.
   */
  onRecord?: (record: string[], line: number) => void
}

export interface Tokenized {
  /** The records (empty when `onRecord` took them). */
  records: string[][]
  /** How many records were found. */
  count: number
  /** The 1-based line of the file on which each record starts (blank lines included, as pandas counts). */
  lines: number[]
  /** The text ended inside a quoted field: pandas raises "EOF inside string starting at row N". */
  unterminatedQuoteAt?: number
  /** Characters consumed: the offset just past the last record kept. */
  consumed: number
  /** Some quoted field held a line break. */
  quotedNewlines: boolean
}

const LF = 10
const CR = 13
const QUOTE = 34
const SPACE = 32
const TAB = 9

enum State {
  StartRecord,
  StartField,
  InField,
  InQuoted,
  QuoteInQuoted,
}

export function tokenize(text: string, options: TokenizeOptions): Tokenized {
  const delimiter = options.delimiter.charCodeAt(0)
  const maxRecords = options.maxRecords ?? Number.POSITIVE_INFINITY
  const onRecord = options.onRecord
  let count = 0
  const final = options.final ?? true
  const records: string[][] = []
  const lines: number[] = []
  const length = text.length
  let state = State.StartRecord
  let record: string[] = []
  let field = '' // the part of the current field already copied out
  let runStart = 0 // where the uncopied run of the current field begins
  let line = 1
  let recordLine = 1
  let consumed = 0
  let quotedNewlines = false
  let i = 0

  const endRecord = (end: number) => {
    if (onRecord) onRecord(record, recordLine)
    else {
      records.push(record)
      lines.push(recordLine)
    }
    count++
    record = []
    consumed = end
    state = State.StartRecord
  }

  while (i < length) {
    const c = text.charCodeAt(i)
    switch (state) {
      case State.StartRecord: {
        if (count >= maxRecords) return { records, count, lines, consumed, quotedNewlines }
        if (c === LF) {
          line++
          i++
          consumed = i
          continue
        }
        if (c === CR) {
          line++
          i += text.charCodeAt(i + 1) === LF ? 2 : 1
          consumed = i
          continue
        }
        if ((c === SPACE || c === TAB) && c !== delimiter) {
          // A whitespace-only line is skipped; otherwise the record starts at the line's start.
          let j = i + 1
          while (j < length) {
            const d = text.charCodeAt(j)
            if ((d === SPACE || d === TAB) && d !== delimiter) j++
            else break
          }
          const d = j < length ? text.charCodeAt(j) : -1
          if (d === LF || d === CR || (d === -1 && final)) {
            i = j
            continue
          }
        }
        recordLine = line
        state = State.StartField
        continue // the same character starts the first field
      }
      case State.StartField: {
        if (c === QUOTE) {
          field = ''
          runStart = i + 1
          state = State.InQuoted
        } else if (c === delimiter) {
          record.push('')
        } else if (c === LF || c === CR) {
          record.push('')
          line++
          i += c === CR && text.charCodeAt(i + 1) === LF ? 1 : 0
          endRecord(i + 1)
        } else {
          field = ''
          runStart = i
          state = State.InField
        }
        i++
        continue
      }
      case State.InField: {
        // Fast path: scan to the next delimiter or line end.
        let j = i
        while (j < length) {
          const d = text.charCodeAt(j)
          if (d === delimiter || d === LF || d === CR) break
          j++
        }
        if (j >= length) {
          i = j
          continue
        }
        const d = text.charCodeAt(j)
        record.push(field + text.slice(runStart, j))
        field = ''
        if (d === delimiter) {
          state = State.StartField
          i = j + 1
        } else {
          line++
          i = d === CR && text.charCodeAt(j + 1) === LF ? j + 2 : j + 1
          endRecord(i)
        }
        continue
      }
      case State.InQuoted: {
        const j = text.indexOf('"', i)
        if (j === -1) {
          for (let k = i; k < length; k++) {
            const d = text.charCodeAt(k)
            if (d === LF || (d === CR && text.charCodeAt(k + 1) !== LF)) line++
          }
          if (i < length) quotedNewlines ||= /[\r\n]/.test(text.slice(i))
          i = length
          continue
        }
        for (let k = i; k < j; k++) {
          const d = text.charCodeAt(k)
          if (d === LF) {
            line++
            quotedNewlines = true
          } else if (d === CR) {
            quotedNewlines = true
            if (text.charCodeAt(k + 1) !== LF) line++
          }
        }
        field += text.slice(runStart, j)
        state = State.QuoteInQuoted
        i = j + 1
        continue
      }
      case State.QuoteInQuoted: {
        if (c === QUOTE) {
          field += '"'
          runStart = i + 1
          state = State.InQuoted
          i++
        } else if (c === delimiter) {
          record.push(field)
          field = ''
          state = State.StartField
          i++
        } else if (c === LF || c === CR) {
          record.push(field)
          field = ''
          line++
          i = c === CR && text.charCodeAt(i + 1) === LF ? i + 2 : i + 1
          endRecord(i)
        } else {
          // pandas is lenient: text after the closing quote joins the field.
          runStart = i
          state = State.InField
        }
        continue
      }
    }
  }

  // End of text.
  if (state === State.StartRecord)
    return { records, count, lines, consumed: final ? length : consumed, quotedNewlines }
  if (!final) return { records, count, lines, consumed, quotedNewlines }
  if (state === State.InQuoted) {
    return { records, count, lines, consumed, quotedNewlines, unterminatedQuoteAt: count + 1 }
  }
  if (state === State.InField) record.push(field + text.slice(runStart, length))
  else if (state === State.QuoteInQuoted) record.push(field)
  else if (state === State.StartField && record.length > 0) record.push('')
  if (record.length > 0) endRecord(length)
  return { records, count, lines, consumed: length, quotedNewlines }
}
