/**
 * Guesses the field separator and the decimal mark of CSV text, as a person would: the separator
 * that splits the first lines into the same number of fields, more than one.
 * @module
 */
import { tokenize } from './tokenize.js'

const CANDIDATES = [',', '\t', ';', '|']

export function sniffDelimiter(text: string, preferTab: boolean): string {
  const sample = text.length > 65536 ? text.slice(0, text.lastIndexOf('\n', 65536) + 1 || 65536) : text
  const order = preferTab ? ['\t', ',', ';', '|'] : CANDIDATES
  let best = order[0] as string
  let bestScore = 0
  for (const delimiter of order) {
    const { records } = tokenize(sample, { delimiter, maxRecords: 50, final: sample.length === text.length })
    if (records.length === 0) continue
    const counts = new Map<number, number>()
    for (const record of records) counts.set(record.length, (counts.get(record.length) ?? 0) + 1)
    let mode = 0
    let modeCount = 0
    for (const [fields, count] of counts) {
      if (count > modeCount || (count === modeCount && fields > mode)) {
        mode = fields
        modeCount = count
      }
    }
    if (mode <= 1) continue
    const header = records[0]?.length ?? 0
    // Consistency first (the header agreeing counts extra), then more fields.
    const score = (modeCount / records.length) * 1000 + (header === mode ? 100 : 0) + Math.min(mode, 99)
    if (score > bestScore) {
      best = delimiter
      bestScore = score
    }
  }
  return best
}

const DECIMAL_COMMA = /^\s*-?\d+,\d+\s*$/
const DECIMAL_DOT = /^\s*-?\d+\.\d+\s*$/

/**
 * ',' when numbers in the records are written with a decimal comma (1,5) and never with a point;
 * only possible when the separator is not a comma.
 */
export function sniffDecimal(records: string[][], delimiter: string): string {
  if (delimiter === ',') return '.'
  let commas = 0
  let dots = 0
  for (const record of records) {
    for (const field of record) {
      if (DECIMAL_COMMA.test(field)) commas++
      else if (DECIMAL_DOT.test(field)) dots++
    }
  }
  return commas > 0 && dots === 0 ? ',' : '.'
}
