/**
 * Row estimates for data files, which DuckDB reads through views and so keeps no statistics of.
 * A text file (CSV, TSV, NDJSON) is measured by its first lines: its size over their mean length,
 * exact when the whole file is in that first read. Never a full read, so a 10 GB file costs what
 * a small one does. Parquet counts come from DuckDB, which reads them from the file's footer.
 * @module
 */
import { open } from 'node:fs/promises'

/** Bytes read from the start of a file to measure its lines. */
const HEAD_BYTES = 1 << 20

/** Whether the file's rows are lines of text, so that its size says how many there are. */
export function isLineFile(path: string): boolean {
  return /\.(csv|tsv|txt|ndjson|jsonl)$/i.test(path)
}

/** Rows of a CSV/TSV (after its header) or NDJSON file: exact when small, else an estimate. */
export async function estimateLineRows(path: string): Promise<number | undefined> {
  const file = await open(path, 'r')
  try {
    const { size } = await file.stat()
    const head = Buffer.alloc(Math.min(size, HEAD_BYTES))
    const { bytesRead } = await file.read(head, 0, head.length, 0)
    let lines = 0
    let lastEnd = 0
    for (let at = head.indexOf(10); at !== -1 && at < bytesRead; at = head.indexOf(10, at + 1)) {
      lines++
      lastEnd = at + 1
    }
    const header = /\.(ndjson|jsonl)$/i.test(path) ? 0 : 1
    if (bytesRead === size) {
      // A last line without its newline is a row too.
      const total = lines + (lastEnd < size ? 1 : 0)
      return Math.max(0, total - header)
    }
    if (lines < 2) return undefined
    return Math.max(0, Math.round((size / lastEnd) * lines) - header)
  } finally {
    await file.close()
  }
}
