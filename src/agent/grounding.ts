/**
 * Grounding: every number the answer states must appear in something the session's code
 * printed or returned (or in the question itself). A number counts as appearing when an output
 * holds it, possibly with more decimals (813.1 is supported by 813.0512), as a fraction of a
 * stated percentage (12.3% by 0.1234), or scaled by a stated word (1.2 million by 1203311).
 * Small whole numbers (0 to 10) are not checked: they are counts and ordinals in ordinary prose.
 * @module
 */
import type { Execution } from '../sandbox/index.js'

export interface StatedNumber {
  /** As written in the answer, e.g. `$1,234.5`, `12.3%`, `1.2 million`. */
  text: string
  value: number
  /** Half a unit of the last digit written: how far off a rounded value may be. */
  tolerance: number
  percent: boolean
}

const SCALES: Record<string, number> = {
  thousand: 1e3,
  k: 1e3,
  million: 1e6,
  m: 1e6,
  mn: 1e6,
  billion: 1e9,
  bn: 1e9,
  b: 1e9,
}
const NUMBER =
  /(?<![\w.])([-+−]?)([$€£¥]?)((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE]([-+]?\d+))?(\s*%|\s*(?:thousand|million|billion|mn|bn)\b|[kKmMbB]\b)?(?![\w])/g

function parseNumbers(text: string, withScales: boolean): StatedNumber[] {
  const found: StatedNumber[] = []
  for (const match of text.matchAll(NUMBER)) {
    const [whole, sign = '', , digits = '', exponent, suffix = ''] = match
    const plain = digits.replace(/,/g, '')
    const decimals = plain.includes('.') ? (plain.split('.')[1]?.length ?? 0) : 0
    let value = Number(plain) * 10 ** Number(exponent ?? 0)
    let tolerance = 0.5 * 10 ** (-decimals + Number(exponent ?? 0))
    const unit = suffix.trim().toLowerCase()
    const percent = unit === '%'
    if (withScales && unit && !percent) {
      const scale = SCALES[unit] ?? 1
      value *= scale
      tolerance *= scale
    }
    if (sign === '-' || sign === '−') value = -value
    if (Number.isFinite(value)) found.push({ text: whole.trim(), value, tolerance, percent })
  }
  return found
}

/** Numbers an answer states, skipping list markers and small whole numbers. */
export function statedNumbers(answer: string): StatedNumber[] {
  const withoutMarkers = answer.replace(/^\s*\d+[.)]\s/gm, ' ').replace(/`[^`]*`/g, ' ')
  return parseNumbers(withoutMarkers, true).filter(
    (n) => !(Number.isInteger(n.value) && Math.abs(n.value) <= 10 && !n.text.includes('.')),
  )
}

/** Every number in the evidence, sorted, for range lookups. */
export class Evidence {
  private values: number[] = []
  private sorted = true

  add(text: string) {
    for (const number of parseNumbers(text, false)) this.values.push(number.value, Math.abs(number.value))
    this.sorted = false
  }

  addValues(values: Iterable<unknown>) {
    for (const value of values) {
      if (typeof value === 'number' && Number.isFinite(value)) this.values.push(value, Math.abs(value))
    }
    this.sorted = false
  }

  /** What a cell printed and returned: its streams, its results' text, its tables' values. */
  addExecution(execution: Pick<Execution, 'logs' | 'results'>) {
    for (const line of [...execution.logs.stdout, ...execution.logs.stderr]) this.add(line)
    for (const result of execution.results) {
      if (result.text) this.add(result.text)
      if (result.data) for (const column of Object.values(result.data)) this.addValues(column)
    }
  }

  private hasWithin(low: number, high: number): boolean {
    if (!this.sorted) {
      this.values.sort((a, b) => a - b)
      this.sorted = true
    }
    let lo = 0
    let hi = this.values.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if ((this.values[mid] as number) < low) lo = mid + 1
      else hi = mid
    }
    return lo < this.values.length && (this.values[lo] as number) <= high
  }

  supports(number: StatedNumber): boolean {
    const epsilon = Math.abs(number.value) * 1e-9 + 1e-12
    const near = (value: number, tolerance: number) =>
      this.hasWithin(value - tolerance - epsilon, value + tolerance + epsilon)
    const magnitude = Math.abs(number.value)
    if (near(magnitude, number.tolerance)) return true
    return number.percent && near(magnitude / 100, number.tolerance / 100)
  }
}

/** The numbers of `answer` that no evidence supports, as written. */
export function unsupportedNumbers(answer: string, evidence: Evidence): string[] {
  return [
    ...new Set(
      statedNumbers(answer)
        .filter((n) => !evidence.supports(n))
        .map((n) => n.text),
    ),
  ]
}
