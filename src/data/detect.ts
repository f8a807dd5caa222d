/**
 * What a file is: its format and compression, from its first bytes first and its name second (a
 * file named .csv that is really gzip or binary is told apart).
 * @module
 */
import type { DataFormat } from './types.js'

export interface Detected {
  format: DataFormat | 'xls' | 'binary'
  compression?: 'gzip' | 'zip'
  /** The name without a compression suffix (`sales.csv` for `sales.csv.gz`). */
  inner: string
}

const GZIP = [0x1f, 0x8b]
const ZIP = [0x50, 0x4b, 0x03, 0x04]
const EMPTY_ZIP = [0x50, 0x4b, 0x05, 0x06]
const PARQUET = [0x50, 0x41, 0x52, 0x31] // PAR1
const OLE = [0xd0, 0xcf, 0x11, 0xe0] // .xls (BIFF in an OLE container)

function startsWith(bytes: Buffer, magic: number[]): boolean {
  return magic.every((b, i) => bytes[i] === b)
}

/** The format a file name suggests, or undefined. */
export function formatFromName(name: string): DataFormat | 'xls' | undefined {
  const lower = name.toLowerCase()
  if (/\.(csv|txt|dat)$/.test(lower)) return 'csv'
  if (/\.(tsv|tab)$/.test(lower)) return 'tsv'
  if (/\.(jsonl|ndjson)$/.test(lower)) return 'ndjson'
  if (/\.json$/.test(lower)) return 'json'
  if (/\.(xlsx|xlsm)$/.test(lower)) return 'excel'
  if (/\.xls$/.test(lower)) return 'xls'
  if (/\.(parquet|pq|parq)$/.test(lower)) return 'parquet'
  return undefined
}

/** Tells JSON (one document) from NDJSON (a document per line) by the text's start. */
export function jsonKind(text: string, byName: DataFormat | 'xls' | undefined): 'json' | 'ndjson' {
  const trimmed = text.trimStart()
  if (trimmed.startsWith('[')) return 'json'
  if (byName === 'ndjson') return 'ndjson'
  // `{...}\n{...}`: several documents, one per line.
  const firstLine = trimmed.split('\n', 1)[0] ?? ''
  try {
    JSON.parse(firstLine)
    const rest = trimmed.slice(firstLine.length).trimStart()
    return rest.startsWith('{') ? 'ndjson' : 'json'
  } catch {
    return 'json'
  }
}

export function detect(name: string, head: Buffer): Detected {
  if (startsWith(head, GZIP)) {
    const inner = name.replace(/\.gz$/i, '')
    return { format: formatFromName(inner) ?? 'csv', compression: 'gzip', inner }
  }
  if (startsWith(head, ZIP) || startsWith(head, EMPTY_ZIP)) {
    const byName = formatFromName(name)
    if (byName === 'excel') return { format: 'excel', inner: name }
    return { format: 'unknown', compression: 'zip', inner: name.replace(/\.zip$/i, '') }
  }
  if (startsWith(head, PARQUET)) return { format: 'parquet', inner: name }
  if (startsWith(head, OLE)) return { format: 'xls', inner: name }
  const byName = formatFromName(name)
  if (byName === 'parquet' || byName === 'excel' || byName === 'xls') {
    // Named so, but the magic bytes say otherwise: read it as what it holds.
    return { format: 'binary', inner: name }
  }
  const first = head
    .subarray(0, 64)
    .toString('latin1')
    .replace(/^\ufeff|^\xef\xbb\xbf/, '')
    .trimStart()
  if (
    byName === 'json' ||
    byName === 'ndjson' ||
    (!byName && (first.startsWith('[') || first.startsWith('{')))
  ) {
    return { format: jsonKind(head.toString('utf8'), byName), inner: name }
  }
  return { format: byName ?? 'csv', inner: name }
}
