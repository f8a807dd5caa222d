/**
 * A tiny writer of old Excel workbooks (.xls: BIFF8 records in an OLE2 compound file), for tests:
 * numbers, text, dates and empty cells, one or more sheets. Nothing in Debian 12 writes .xls from
 * Python (xlwt is not packaged), and a fixture written here says what it holds.
 *
 * The layout follows [MS-XLS] and [MS-CFB]: a `Workbook` stream with the globals (code page, one
 * cell style per number format, the sheets' names and offsets) and one substream per sheet, stored
 * in 512-byte sectors; the stream is padded to 4096 bytes so that it is a regular stream, not one
 * in the mini stream.
 * @module
 */

export type XlsCell = string | number | Date | null

export interface XlsSheet {
  name: string
  rows: XlsCell[][]
}

const FORMAT_GENERAL = 0
const FORMAT_DATE = 14 // built-in "m/d/yy": readers turn such numbers into dates

function record(id: number, body: Buffer): Buffer {
  const head = Buffer.alloc(4)
  head.writeUInt16LE(id, 0)
  head.writeUInt16LE(body.length, 2)
  return Buffer.concat([head, body])
}

/** A BIFF8 string: UTF-16LE, with its length in a u8 or u16. */
function text(value: string, lengthBytes: 1 | 2): Buffer {
  const chars = Buffer.from(value, 'utf16le')
  const head = Buffer.alloc(lengthBytes + 1)
  if (lengthBytes === 1) head.writeUInt8(value.length, 0)
  else head.writeUInt16LE(value.length, 0)
  head.writeUInt8(0x01, lengthBytes) // high bytes present
  return Buffer.concat([head, chars])
}

function bof(kind: 'globals' | 'sheet'): Buffer {
  const body = Buffer.alloc(16)
  body.writeUInt16LE(0x0600, 0) // BIFF8
  body.writeUInt16LE(kind === 'globals' ? 0x0005 : 0x0010, 2)
  body.writeUInt16LE(0x0dbb, 4) // build
  body.writeUInt16LE(0x07cc, 6) // year
  return record(0x0809, body)
}

const eof = () => record(0x000a, Buffer.alloc(0))

function xf(format: number): Buffer {
  const body = Buffer.alloc(20)
  body.writeUInt16LE(0, 0) // font
  body.writeUInt16LE(format, 2)
  body.writeUInt16LE(0x0001, 4) // a cell style, locked, parent style 0
  return record(0x00e0, body)
}

/** Days since 1899-12-30, as Excel counts (1900 date system). */
function excelDate(date: Date): number {
  return (date.getTime() - Date.UTC(1899, 11, 30)) / 86_400_000
}

function cell(row: number, col: number, value: XlsCell): Buffer | undefined {
  if (value === null) return undefined
  if (typeof value === 'string') {
    const head = Buffer.alloc(6)
    head.writeUInt16LE(row, 0)
    head.writeUInt16LE(col, 2)
    head.writeUInt16LE(0, 4) // style: General
    return record(0x0204, Buffer.concat([head, text(value, 2)])) // LABEL
  }
  const body = Buffer.alloc(14)
  body.writeUInt16LE(row, 0)
  body.writeUInt16LE(col, 2)
  body.writeUInt16LE(value instanceof Date ? 1 : 0, 4) // style 1 is the date format
  body.writeDoubleLE(value instanceof Date ? excelDate(value) : value, 6)
  return record(0x0203, body) // NUMBER
}

function sheetStream(sheet: XlsSheet): Buffer {
  const dimensions = Buffer.alloc(14)
  dimensions.writeUInt32LE(0, 0)
  dimensions.writeUInt32LE(sheet.rows.length, 4)
  dimensions.writeUInt16LE(0, 8)
  dimensions.writeUInt16LE(Math.max(0, ...sheet.rows.map((row) => row.length)), 10)
  const cells = sheet.rows.flatMap((row, r) =>
    row.flatMap((value, c) => {
      const written = cell(r, c, value)
      return written ? [written] : []
    }),
  )
  return Buffer.concat([bof('sheet'), record(0x0200, dimensions), ...cells, eof()])
}

/** The BIFF8 `Workbook` stream. */
function workbookStream(sheets: XlsSheet[]): Buffer {
  const codepage = Buffer.alloc(2)
  codepage.writeUInt16LE(1200, 0) // UTF-16
  const boundsheet = (sheet: XlsSheet, offset: number) => {
    const head = Buffer.alloc(6)
    head.writeUInt32LE(offset, 0)
    return record(0x0085, Buffer.concat([head, text(sheet.name, 1)])) // visible worksheet
  }
  const bodies = sheets.map(sheetStream)
  // The globals' size does not depend on the offsets: measure them once with zeros.
  const globals = (offsets: number[]) =>
    Buffer.concat([
      bof('globals'),
      record(0x0042, codepage),
      xf(FORMAT_GENERAL),
      xf(FORMAT_DATE),
      ...sheets.map((sheet, i) => boundsheet(sheet, offsets[i] ?? 0)),
      eof(),
    ])
  let offset = globals([]).length
  const offsets = bodies.map((body) => {
    const at = offset
    offset += body.length
    return at
  })
  const stream = Buffer.concat([globals(offsets), ...bodies])
  return stream.length >= 4096 ? stream : Buffer.concat([stream, Buffer.alloc(4096 - stream.length)])
}

const SECTOR = 512
const END_OF_CHAIN = 0xfffffffe
const FAT_SECTOR = 0xfffffffd
const FREE = 0xffffffff
const NO_STREAM = 0xffffffff

function directoryEntry(
  name: string,
  type: 'root' | 'stream',
  start: number,
  size: number,
  child: number,
): Buffer {
  const entry = Buffer.alloc(128)
  entry.write(name, 0, 'utf16le')
  entry.writeUInt16LE((name.length + 1) * 2, 64)
  entry.writeUInt8(type === 'root' ? 5 : 2, 66)
  entry.writeUInt8(1, 67) // black
  entry.writeUInt32LE(NO_STREAM, 68) // left sibling
  entry.writeUInt32LE(NO_STREAM, 72) // right sibling
  entry.writeUInt32LE(child, 76)
  entry.writeUInt32LE(start, 116)
  entry.writeUInt32LE(size, 120)
  return entry
}

function emptyEntry(): Buffer {
  const entry = Buffer.alloc(128)
  entry.writeUInt32LE(NO_STREAM, 68)
  entry.writeUInt32LE(NO_STREAM, 72)
  entry.writeUInt32LE(NO_STREAM, 76)
  return entry
}

/** An .xls file: the workbook stream in a version 3 compound file. */
export function writeXls(sheets: XlsSheet[]): Buffer {
  const stream = workbookStream(sheets)
  const streamSectors = Math.ceil(stream.length / SECTOR)
  const directorySector = streamSectors
  let fatSectors = 1
  while (fatSectors * (SECTOR / 4) < streamSectors + 1 + fatSectors) fatSectors++
  if (fatSectors > 109) throw new Error('writeXls: workbook too large for this small writer')
  const firstFat = streamSectors + 1

  const fat = Buffer.alloc(fatSectors * SECTOR, 0xff) // FREE
  for (let i = 0; i < streamSectors; i++)
    fat.writeUInt32LE(i === streamSectors - 1 ? END_OF_CHAIN : i + 1, i * 4)
  fat.writeUInt32LE(END_OF_CHAIN, directorySector * 4)
  for (let i = 0; i < fatSectors; i++) fat.writeUInt32LE(FAT_SECTOR, (firstFat + i) * 4)

  const directory = Buffer.concat([
    directoryEntry('Root Entry', 'root', END_OF_CHAIN, 0, 1),
    directoryEntry('Workbook', 'stream', 0, stream.length, NO_STREAM),
    emptyEntry(),
    emptyEntry(),
  ])

  const header = Buffer.alloc(SECTOR)
  Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]).copy(header, 0)
  header.writeUInt16LE(0x003e, 24) // minor version
  header.writeUInt16LE(0x0003, 26) // major version 3: 512-byte sectors
  header.writeUInt16LE(0xfffe, 28) // little-endian
  header.writeUInt16LE(9, 30) // sector size 2^9
  header.writeUInt16LE(6, 32) // mini sector size 2^6
  header.writeUInt32LE(fatSectors, 44)
  header.writeUInt32LE(directorySector, 48)
  header.writeUInt32LE(4096, 56) // mini stream cutoff
  header.writeUInt32LE(END_OF_CHAIN, 60) // no mini FAT
  header.writeUInt32LE(0, 64)
  header.writeUInt32LE(END_OF_CHAIN, 68) // no DIFAT sectors
  header.writeUInt32LE(0, 72)
  for (let i = 0; i < 109; i++) header.writeUInt32LE(i < fatSectors ? firstFat + i : FREE, 76 + i * 4)

  const padded = Buffer.concat([stream, Buffer.alloc(streamSectors * SECTOR - stream.length)])
  return Buffer.concat([header, padded, directory, fat])
}
