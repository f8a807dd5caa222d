/**
 * Which encoding a text file is in, told by its first bytes: a byte-order mark, UTF-16's zero bytes,
 * valid UTF-8, else a single-byte Western encoding. Named as Python names it, for `encoding=`.
 * @module
 */
import { isUtf8 } from 'node:buffer'

export interface TextEncoding {
  /** Python's name for `encoding=`; undefined when pandas' default (UTF-8, BOM or not) reads it. */
  python: string | undefined
  /** A short name for people. */
  label: string
  /** Bytes per code unit: offsets into the file must be multiples of it. */
  unit: 1 | 2
  decode(bytes: Buffer): string
}

const utf8Decoder = new TextDecoder('utf-8')

const UTF8: TextEncoding = {
  python: undefined,
  label: 'UTF-8',
  unit: 1,
  decode: (bytes) => utf8Decoder.decode(bytes),
}
const UTF8_BOM: TextEncoding = {
  ...UTF8,
  label: 'UTF-8 with BOM',
  decode: (bytes) => utf8Decoder.decode(bytes),
}

function utf16(littleEndian: boolean, bom: boolean): TextEncoding {
  return {
    python: bom ? 'utf-16' : littleEndian ? 'utf-16-le' : 'utf-16-be',
    label: `UTF-16${littleEndian ? 'LE' : 'BE'}${bom ? ' with BOM' : ''}`,
    unit: 2,
    decode: (bytes) => {
      const even = bytes.subarray(0, bytes.length - (bytes.length % 2))
      if (littleEndian) return even.toString('utf16le').replace(/^\ufeff/, '')
      const swapped = Buffer.from(even)
      swapped.swap16()
      return swapped.toString('utf16le').replace(/^\ufeff/, '')
    },
  }
}

const LATIN1: TextEncoding = {
  python: 'latin-1',
  label: 'Latin-1',
  unit: 1,
  decode: (bytes) => bytes.toString('latin1'),
}
// Windows-1252's characters for 0x80–0x9F (Latin-1 has control codes there); 0 where undefined.
// Node's TextDecoder('windows-1252') decodes these bytes as Latin-1, so the table is spelled out.
const CP1252_HIGH = [
  0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0,
  0x017d, 0, 0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc, 0x2122, 0x0161, 0x203a,
  0x0153, 0, 0x017e, 0x0178,
]
const CP1252: TextEncoding = {
  python: 'cp1252',
  label: 'Windows-1252',
  unit: 1,
  decode: (bytes) =>
    bytes
      .toString('latin1')
      .replace(/[\x80-\x9f]/g, (c) =>
        String.fromCharCode(CP1252_HIGH[c.charCodeAt(0) - 0x80] || c.charCodeAt(0)),
      ),
}
// Bytes that Windows-1252 leaves undefined: Python's cp1252 codec fails on them.
const CP1252_UNDEFINED = new Set([0x81, 0x8d, 0x8f, 0x90, 0x9d])

/** Strips a trailing partial UTF-8 sequence (a chunk cut mid-character). */
function wholeUtf8(bytes: Buffer): Buffer {
  let end = bytes.length
  for (let back = 1; back <= 3 && end - back >= 0; back++) {
    const b = bytes[end - back] as number
    if ((b & 0xc0) === 0x80) continue // continuation byte: keep looking for the lead
    if ((b & 0xc0) === 0xc0) {
      const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2
      if (need > back) end -= back
    }
    break
  }
  return bytes.subarray(0, end)
}

/**
 * The encoding of a text file from its head. `complete` says the head is the whole file: only then
 * is Windows-1252 chosen over Latin-1 (a byte it leaves undefined later in the file would make
 * pandas fail, while Latin-1 reads any byte).
 */
export function detectEncoding(head: Buffer, complete: boolean): TextEncoding {
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return UTF8_BOM
  if (head[0] === 0xff && head[1] === 0xfe) return utf16(true, true)
  if (head[0] === 0xfe && head[1] === 0xff) return utf16(false, true)
  const probe = head.subarray(0, 4096)
  let evenZeros = 0
  let oddZeros = 0
  for (let i = 0; i < probe.length; i++) if (probe[i] === 0) i % 2 === 0 ? evenZeros++ : oddZeros++
  const half = probe.length / 2
  if (half >= 2 && oddZeros > half * 0.3 && evenZeros < half * 0.05) return utf16(true, false)
  if (half >= 2 && evenZeros > half * 0.3 && oddZeros < half * 0.05) return utf16(false, false)
  if (isUtf8(complete ? head : wholeUtf8(head))) return UTF8
  if (complete) {
    let c1 = false
    for (const b of head) {
      if (b >= 0x80 && b <= 0x9f) {
        if (CP1252_UNDEFINED.has(b)) return LATIN1
        c1 = true
      }
    }
    if (c1) return CP1252
  }
  return LATIN1
}

/**
 * Whether bytes look like a binary file rather than text: NUL bytes (outside UTF-16) or many control
 * characters.
 */
export function looksBinary(head: Buffer, encoding: TextEncoding): boolean {
  if (encoding.unit === 2) return false
  const probe = head.subarray(0, 8192)
  let control = 0
  for (const b of probe) {
    if (b === 0) return true
    if (b < 9 || (b > 13 && b < 32)) control++
  }
  return control > probe.length * 0.01 + 2
}
