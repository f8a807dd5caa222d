/**
 * A PostgreSQL query's rows by `COPY (query) TO STDOUT (FORMAT binary)`, passed to the kernel
 * column by column as the server wrote them: numbers, dates and timestamps as big-endian words
 * that numpy reads whole, text as UTF-8 joined by NUL (which PostgreSQL's text never holds), NULL
 * as a mask. The host parses no value but numerics, which it writes as decimal text. Parsing every
 * value on the host (node-postgres' rows) cost more than psycopg2 + read_sql did on their own
 * (bench/sources.mjs). The column types come first, from a Describe of the statement, which runs
 * nothing; a type outside LAYOUTS is cast to its text. Both speak node-postgres' Submittable: the
 * client hands them the protocol's messages.
 * @module
 */
import type pg from 'pg'
import type { ColumnLayout, QueryColumnData, QueryColumnsBatch } from '../sandbox/query.js'

/** How each type travels, by OID; numeric and jsonb as their text. */
const LAYOUTS: Record<number, ColumnLayout | 'numeric' | 'jsonb'> = {
  16: 'bool',
  17: 'bytes',
  19: 'text',
  20: 'i8',
  21: 'i2',
  23: 'i4',
  25: 'text',
  26: 'u4',
  114: 'text',
  700: 'f4',
  701: 'f8',
  1042: 'text',
  1043: 'text',
  1082: 'date',
  1114: 'usec',
  1184: 'usec',
  1700: 'numeric', // base-10000 digits, written as decimal text
  2950: 'uuid',
  3802: 'jsonb', // a version byte, then the text
}
/** A layout, or how the host reads a column that travels as text. */
type Read = ColumnLayout | 'numeric' | 'jsonb' | 'cast'
const WIDTHS: Partial<Record<ColumnLayout, number>> = {
  bool: 1,
  i2: 2,
  i4: 4,
  u4: 4,
  i8: 8,
  f4: 4,
  f8: 8,
  date: 4,
  usec: 8,
  uuid: 16,
}

/**
 * How these columns are read: a type without a layout (time, interval, arrays, enums, …) as its
 * text, which the COPY casts to (copyStatement); nothing for a statement of no columns.
 */
export function readsOf(fields: pg.FieldDef[]): Read[] | undefined {
  return fields.length > 0 ? fields.map((field) => LAYOUTS[field.dataTypeID] ?? 'cast') : undefined
}

/** How a column read so travels to the kernel. */
export function layoutOf(read: Read): ColumnLayout {
  return read === 'numeric' || read === 'jsonb' || read === 'cast' ? 'text' : read
}

/** A batch's size: well under a Jupyter reply's chunk once in base64 (jupyter/questions.ts). */
const BATCH_BYTES = 512 * 1024
const BATCH_ROWS = 20_000
/** Batches held before the server is made to wait (the socket paused). */
const MAX_QUEUED = 4
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1')

interface Connection {
  stream: { pause(): void; resume(): void; destroy(): void }
  query(text: string): void
  parse(query: { text: string }): void
  describe(message: { type: 'S' }): void
  sync(): void
}

/** The methods node-postgres calls on its active query, whatever the messages were. */
abstract class Submittable {
  abstract submit(connection: Connection): void
  abstract handleError(error: Error): void
  abstract handleReadyForQuery(): void
  handleRowDescription(_message: { fields: pg.FieldDef[] }): void {}
  handleDataRow(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}
  handleCopyData(_message: { chunk: Buffer }): void {}
}

/** A statement's columns (names and type OIDs), from Parse + Describe: planned, not run. */
export function describeStatement(client: pg.ClientBase, text: string): Promise<pg.FieldDef[]> {
  return new Promise((resolve, reject) => {
    let fields: pg.FieldDef[] = []
    class Describe extends Submittable {
      submit(connection: Connection) {
        connection.parse({ text })
        connection.describe({ type: 'S' })
        connection.sync()
      }
      override handleRowDescription(message: { fields: pg.FieldDef[] }) {
        fields = message.fields
      }
      handleError(error: Error) {
        reject(error)
      }
      handleReadyForQuery() {
        resolve(fields)
      }
    }
    client.query(new Describe() as unknown as pg.Submittable)
  })
}

/**
 * The COPY of a checked SELECT, on lines of its own: a comment that ends it ends with its line.
 * Columns read as text are cast to it, the others named by position (a query may name two alike).
 */
export function copyStatement(select: string, reads: Read[]): string {
  if (!reads.includes('cast')) return `COPY (\n${select}\n) TO STDOUT (FORMAT binary)`
  const names = reads.map((_, index) => `c${index + 1}`)
  const columns = reads.map((read, index) =>
    read === 'cast' ? `q.${names[index]}::text` : `q.${names[index]}`,
  )
  return `COPY (SELECT ${columns.join(', ')} FROM (\n${select}\n) AS q(${names.join(', ')})) TO STDOUT (FORMAT binary)`
}

/** A column's bytes as they arrive: words in place (NULL's zeroed, never the heap's old bytes), text grown as needed. */
class ColumnBuilder {
  data: Buffer
  used = 0
  nulls: Uint8Array
  ends: number[] = []
  hasNulls = false

  readonly layout: ColumnLayout
  readonly width: number | undefined

  constructor(
    readonly read: Read,
    rows: number,
  ) {
    this.layout = layoutOf(read)
    this.width = WIDTHS[this.layout]
    this.data = Buffer.alloc(this.width ? this.width * rows : 1024)
    this.nulls = new Uint8Array(rows)
  }

  reserve(bytes: number) {
    if (this.used + bytes <= this.data.length) return
    const grown = Buffer.alloc(Math.max(this.data.length * 2, this.used + bytes))
    this.data.copy(grown, 0, 0, this.used)
    this.data = grown
  }

  batch(rows: number): QueryColumnData {
    return {
      layout: this.layout,
      data: this.data.subarray(0, this.width ? this.width * rows : this.used),
      ...(this.hasNulls ? { nulls: this.nulls.subarray(0, rows) } : {}),
      ...(this.width ? {} : { ends: Uint32Array.from(this.ends) }),
    }
  }
}

/** Copies bytes: by hand when few (Buffer.copy's call costs more than a short value's bytes). */
function copyBytes(from: Buffer, at: number, length: number, to: Buffer, offset: number) {
  if (length > 64) from.copy(to, offset, at, at + length)
  else for (let i = 0; i < length; i++) to[offset + i] = from[at + i] as number
}

/** PostgreSQL's binary numeric (base-10000 digits) as decimal text. */
export function numericText(chunk: Buffer, at: number): string {
  const count = chunk.readInt16BE(at)
  const weight = chunk.readInt16BE(at + 2)
  const sign = chunk.readUInt16BE(at + 4)
  const scale = chunk.readInt16BE(at + 6)
  if (sign === 0xc000) return 'NaN'
  if (sign === 0xd000) return 'Infinity'
  if (sign === 0xf000) return '-Infinity'
  const digit = (index: number) => (index >= 0 && index < count ? chunk.readInt16BE(at + 8 + index * 2) : 0)
  let whole = ''
  for (let index = 0; index <= weight; index++) {
    const value = digit(index)
    whole += whole === '' ? String(value) : String(value).padStart(4, '0')
  }
  if (whole === '' || whole === '0') whole = '0'
  let fraction = ''
  for (let index = weight + 1; fraction.length < scale; index++)
    fraction += String(digit(index)).padStart(4, '0')
  const text = scale > 0 ? `${whole}.${fraction.slice(0, scale)}` : whole
  return sign === 0x4000 ? `-${text}` : text
}

/**
 * A running COPY's rows in columnar batches. The server writes as fast as it can: once
 * MAX_QUEUED batches wait, the socket pauses (the server then waits on TCP), and resumes when
 * they are taken.
 */
export class CopyOut extends Submittable {
  #connection: Connection | undefined
  #columns: ColumnBuilder[] = []
  /** Rows a batch holds at most: as many as BATCH_BYTES can be of, for the narrowest rows. */
  readonly #capacity: number
  /** What every row sends whatever its values: its words, and a NUL a text. */
  readonly #rowWords: number
  #rows = 0
  /** The batch's bytes on the wire (the byte cap's count) and as they go to the kernel. */
  #bytes = 0
  #sent = 0
  #rowEnds: number[] = []
  #headerRead = false
  /** The start of a row whose end is in the next message (the protocol lets a message end anywhere). */
  #carry: Buffer | undefined
  #queued: QueryColumnsBatch[] = []
  #paused = false
  #discarding = false
  #ended = false
  #error: Error | undefined
  #wake: (() => void) | undefined
  /** Settles once the server has ended the COPY (done, failed or cancelled). */
  readonly settled: Promise<void>
  #settle!: () => void

  constructor(
    private readonly text: string,
    private readonly reads: Read[],
  ) {
    super()
    this.settled = new Promise((resolve) => {
      this.#settle = resolve
    })
    // A row takes 2 bytes and 4 a field on the wire at least (a NULL), and its words' widths and
    // a NUL a text when sent.
    const widths = reads.map((read) => WIDTHS[layoutOf(read)] ?? (layoutOf(read) === 'text' ? 1 : 0))
    this.#rowWords = widths.reduce((sum, width) => sum + width, 0)
    this.#capacity = Math.min(
      BATCH_ROWS,
      Math.floor(BATCH_BYTES / (2 + 4 * reads.length)) + 1,
      Math.floor(BATCH_BYTES / Math.max(1, this.#rowWords)) + 1,
    )
    this.#start()
  }

  /** The server has ended the COPY. */
  get ended(): boolean {
    return this.#ended
  }

  submit(connection: Connection) {
    this.#connection = connection
    connection.query(this.text)
  }

  override handleCopyData({ chunk }: { chunk: Buffer }) {
    if (this.#discarding) return
    try {
      this.#parse(this.#carry ? Buffer.concat([this.#carry, chunk]) : chunk)
    } catch (error) {
      // Not the format this reads: the rows stop here, and the reader's leaving cancels the COPY.
      this.#error ??= error instanceof Error ? error : new Error(String(error))
      this.discard()
      this.#wakeReader()
    }
  }

  /** Reads the whole rows of these bytes (the header first); a row cut short waits for the rest. */
  #parse(bytes: Buffer) {
    let at = 0
    if (!this.#headerRead) {
      // The signature, flags, then a header extension of a given length.
      if (bytes.length >= 11 && !bytes.subarray(0, 11).equals(SIGNATURE))
        throw new Error('COPY sent no binary header')
      const end = bytes.length >= 19 ? 19 + bytes.readUInt32BE(15) : Number.POSITIVE_INFINITY
      if (bytes.length < end) {
        this.#carry = Buffer.from(bytes)
        return
      }
      at = end
      this.#headerRead = true
    }
    // The trailer is a field count of -1.
    while (at + 2 <= bytes.length) {
      const fields = bytes.readInt16BE(at)
      if (fields === -1) {
        at = bytes.length
        break
      }
      if (fields !== this.#columns.length)
        throw new Error(`COPY sent a row of ${fields} fields for ${this.#columns.length} columns`)
      const end = this.#row(bytes, at + 2)
      if (end < 0) break
      at = end
    }
    // Copied: the driver reuses the buffer the message came in.
    this.#carry = at < bytes.length ? Buffer.from(bytes.subarray(at)) : undefined
  }

  /**
   * Adds the row whose fields start at `start`; where it ends, or -1 when these bytes do not hold
   * all of it (what it had added is taken back: the row comes again with the rest).
   */
  #row(chunk: Buffer, start: number): number {
    let at = start
    const row = this.#rows
    const end = chunk.length
    let sent = this.#rowWords
    for (const column of this.#columns) {
      if (at + 4 > end) return this.#takeBack(row)
      const length = chunk.readInt32BE(at)
      at += 4
      if (length < 0) {
        column.nulls[row] = 1
        column.hasNulls = true
        if (column.layout === 'text') {
          column.reserve(1)
          column.data[column.used++] = 0 // an empty text, masked
        }
        if (!column.width) column.ends.push(column.used)
        continue
      }
      if (at + length > end) return this.#takeBack(row)
      const { width, read } = column
      if (width) {
        if (length !== width) throw new Error(`COPY sent ${length} bytes for a ${column.layout} value`)
        copyBytes(chunk, at, length, column.data, row * width)
      } else if (read === 'bytes') {
        column.reserve(length)
        copyBytes(chunk, at, length, column.data, column.used)
        column.used += length
        column.ends.push(column.used)
        sent += length
      } else if (read === 'numeric') {
        const text = numericText(chunk, at)
        column.reserve(text.length + 1)
        const data = column.data
        for (let i = 0; i < text.length; i++) data[column.used + i] = text.charCodeAt(i)
        column.used += text.length
        data[column.used++] = 0
        column.ends.push(column.used)
        sent += text.length
      } else {
        // Text with a NUL after each value (text never holds one): jsonb's after its version byte.
        const from = read === 'jsonb' ? at + 1 : at
        const size = at + length - from
        column.reserve(size + 1)
        copyBytes(chunk, from, size, column.data, column.used)
        column.used += size
        column.data[column.used++] = 0
        column.ends.push(column.used)
        sent += size
      }
      at += length
    }
    this.#rows++
    this.#bytes += at - start
    this.#sent += sent
    this.#rowEnds.push(this.#bytes)
    if (this.#rows >= this.#capacity || this.#bytes >= BATCH_BYTES || this.#sent >= BATCH_BYTES) this.#flush()
    return at
  }

  /** Takes back what a row cut short had added: its texts' and bytes' ends, its NULLs. */
  #takeBack(row: number): number {
    for (const column of this.#columns) {
      column.nulls[row] = 0
      if (column.width) continue
      column.ends.length = row
      column.used = row > 0 ? (column.ends[row - 1] as number) : 0
    }
    return -1
  }

  handleError(error: Error) {
    this.#error ??= error
    this.#finish()
  }

  handleReadyForQuery() {
    this.#flush()
    this.#finish()
  }

  /** Closes the connection under the COPY (its cancel did not reach the server): the server ends it at its next write. */
  abandon() {
    this.#connection?.stream.destroy()
  }

  /** Stops taking rows (the reader has left): what still comes is dropped until the COPY ends. */
  discard() {
    this.#discarding = true
    this.#queued = []
    this.#resume()
  }

  async *batches(): AsyncGenerator<QueryColumnsBatch> {
    for (;;) {
      const batch = this.#queued.shift()
      if (batch) {
        if (this.#queued.length < MAX_QUEUED / 2) this.#resume()
        yield batch
      } else if (this.#error) throw this.#error
      else if (this.#ended) return
      else await new Promise<void>((wake) => (this.#wake = wake))
    }
  }

  #start() {
    this.#columns = this.reads.map((read) => new ColumnBuilder(read, this.#capacity))
    this.#rows = 0
    this.#bytes = 0
    this.#sent = 0
    this.#rowEnds = []
  }

  /** Queues the rows so far. */
  #flush() {
    if (this.#rows > 0 && !this.#discarding) {
      this.#queued.push({
        rows: this.#rows,
        rowEnds: Uint32Array.from(this.#rowEnds),
        columns: this.#columns.map((column) => column.batch(this.#rows)),
      })
      this.#wakeReader()
      if (this.#queued.length >= MAX_QUEUED && !this.#paused) {
        this.#paused = true
        this.#connection?.stream.pause()
      }
    }
    this.#start()
  }

  #finish() {
    this.#ended = true
    this.#resume()
    this.#wakeReader()
    this.#settle()
  }

  #resume() {
    if (!this.#paused) return
    this.#paused = false
    this.#connection?.stream.resume()
  }

  #wakeReader() {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }
}
