/**
 * Counts the records of a CSV file as pandas' tokenizer would (quoted line breaks stay inside their
 * record, blank and whitespace-only lines are skipped), streaming through the file in fixed-size
 * buffers: the file is never held in memory. For one-byte encodings with \n or \r\n line ends.
 * @module
 */
import { open } from 'node:fs/promises'

const BUFFER = 4 * 1024 * 1024
const LF = 10
const CR = 13
const QUOTE = 34
const SPACE = 32
const TAB = 9

export async function countRecords(path: string, delimiter: string, signal?: AbortSignal): Promise<number> {
  const delim = delimiter.charCodeAt(0)
  const handle = await open(path, 'r')
  const buffer = Buffer.allocUnsafe(BUFFER)
  let records = 0
  let content = false // the current line has something besides spaces
  let quoted = false // inside a quoted field
  let afterQuote = false // just saw a quote inside a quoted field (maybe the closing one)
  let fieldStart = true // the next byte starts a field
  let position = 0
  try {
    for (;;) {
      signal?.throwIfAborted()
      const { bytesRead } = await handle.read(buffer, 0, BUFFER, position)
      if (bytesRead === 0) break
      position += bytesRead
      let i = 0
      while (i < bytesRead) {
        if (quoted) {
          // Jump to the next quote: everything before it belongs to the field.
          const q = buffer.indexOf(QUOTE, i)
          if (q === -1 || q >= bytesRead) {
            i = bytesRead
            break
          }
          i = q + 1
          quoted = false
          afterQuote = true
          continue
        }
        const b = buffer[i] as number
        if (afterQuote) {
          afterQuote = false
          if (b === QUOTE) {
            quoted = true // a doubled quote: still inside
            i++
            continue
          }
        }
        if (b === LF) {
          if (content) records++
          content = false
          fieldStart = true
        } else if (b === delim) {
          content = true
          fieldStart = true
        } else if (b === QUOTE && fieldStart) {
          content = true
          quoted = true
          fieldStart = false
        } else if (b !== CR) {
          if (b !== SPACE && b !== TAB) content = true
          fieldStart = false
        }
        i++
      }
    }
  } finally {
    await handle.close()
  }
  if (content || quoted) records++
  return records
}
