/**
 * Counts the records of a CSV file as pandas' tokenizer would (a quote opens a quoted field only at
 * the start of a field, quoted line breaks stay inside their record, blank and whitespace-only lines
 * are skipped), streaming through the file in fixed-size buffers: the file is never held in memory.
 * Jumps from line end to line end and quote to quote with `indexOf` (memchr) rather than visiting
 * every byte in JavaScript. For one-byte encodings with \n or \r\n line ends.
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
  const blank = (b: number) => b === SPACE || b === CR || (b === TAB && delim !== TAB)
  const handle = await open(path, 'r')
  const buffer = Buffer.allocUnsafe(BUFFER)
  let records = 0
  let content = false // the current line has something besides blanks
  let quoted = false // inside a quoted field
  let afterQuote = false // just left a quoted field at a quote (a doubled quote keeps it open)
  let previous = LF // the byte before the current one (a line end before the file starts)
  let position = 0
  try {
    for (;;) {
      signal?.throwIfAborted()
      const { bytesRead: length } = await handle.read(buffer, 0, BUFFER, position)
      if (length === 0) break
      position += length
      const view = length === BUFFER ? buffer : buffer.subarray(0, length)
      let nextLine = -2 // cached positions of the next \n and the next quote (-2: not looked up)
      let nextQuote = -2
      let i = 0
      while (i < length) {
        if (quoted) {
          const q = view.indexOf(QUOTE, i)
          if (q === -1) {
            i = length
            break
          }
          quoted = false
          afterQuote = true
          i = q + 1
          continue
        }
        if (afterQuote) {
          afterQuote = false
          if (view[i] === QUOTE) {
            quoted = true
            i++
            continue
          }
        }
        if (nextLine !== -1 && nextLine < i) nextLine = view.indexOf(LF, i)
        if (nextQuote !== -1 && nextQuote < i) nextQuote = view.indexOf(QUOTE, i)
        if (nextQuote !== -1 && (nextLine === -1 || nextQuote < nextLine)) {
          // A quote before the line ends: it opens a quoted field only at the start of a field.
          const before = nextQuote === 0 ? previous : (view[nextQuote - 1] as number)
          if (!content) {
            for (let k = i; k < nextQuote; k++) if (!blank(view[k] as number)) content = true
          }
          const fieldStart =
            before === delim || before === LF || (!content && before !== SPACE && before !== TAB)
          content = true
          quoted = fieldStart
          i = nextQuote + 1
          continue
        }
        const end = nextLine === -1 ? length : nextLine
        if (!content) {
          for (let k = i; k < end; k++) {
            if (!blank(view[k] as number)) {
              content = true
              break
            }
          }
        }
        if (nextLine === -1) {
          i = length
          break
        }
        if (content) records++
        content = false
        i = nextLine + 1
      }
      previous = view[length - 1] as number
    }
  } finally {
    await handle.close()
  }
  if (content || quoted) records++
  return records
}
