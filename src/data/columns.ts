/**
 * Column statistics from typed values (numbers, booleans, text, null), in one pass and bounded
 * memory, plus the warnings a column deserves: numbers or dates stored as text, thousands
 * separators, mixed types, sentinel codes such as -999.
 * @module
 */
import { DateTracker } from './dates.js'
import type { Cell, ColumnProfile } from './types.js'

/** Past this many distinct values a column stops counting new ones (the count becomes a floor). */
export const MAX_DISTINCT = 50_000
const SAMPLES = 3
const TOP = 5
const SENTINELS = new Set([-9999999, -999999, -99999, -9999, -999, -99, 999, 9999, 99999, 999999, 9999999])

// Spellings of "missing" that read_csv does not treat as NaN by default (pandas 1.5).
const MISSING_TEXT = new Set([
  'none',
  '-',
  '--',
  '?',
  'missing',
  'unknown',
  'n.a.',
  'na.',
  'not available',
  '.',
  'nil',
  '#n/a!',
  'undefined',
  'empty',
])
const PLAIN_NUMBER = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/
const THOUSANDS_COMMA = /^\s*[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?\s*$/
const THOUSANDS_DOT = /^\s*[+-]?\d{1,3}(?:\.\d{3})+(?:,\d+)?\s*$/
const DECIMAL_COMMA = /^\s*[+-]?\d+,\d+\s*$/
const DECORATED_NUMBER = /^\s*[+-]?\s*[$€£¥]?\s*[+-]?\d[\d,.]*\s*%?\s*$/

export interface ColumnResult {
  profile: ColumnProfile
  warnings: string[]
}

function quote(name: string): string {
  const short = name.length > 80 ? `${name.slice(0, 79)}…` : name
  return JSON.stringify(short).length === short.length + 2 && !short.includes("'")
    ? `'${short}'`
    : JSON.stringify(short)
}

function round(value: number): number {
  if (!Number.isFinite(value) || Number.isInteger(value)) return value
  return Number(value.toPrecision(6))
}

/** Accumulates one column. `dtype` is the pandas dtype the values were read as. */
export class ColumnAccumulator {
  private nulls = 0
  private readonly counts = new Map<string | number | boolean, number>()
  private capped = false
  private readonly samples: Cell[] = []
  private min = Number.POSITIVE_INFINITY
  private max = Number.NEGATIVE_INFINITY
  private sum = 0
  private numbers = 0
  private texts = 0
  private numericTexts = 0
  private thousandsTexts = 0
  private thousandsDots = 0
  private numberish = 0 // plain, with thousands separators, or with a decimal comma
  private decimalCommaTexts = 0
  private decoratedTexts = 0
  private exampleText?: string
  private exampleNumberText?: string
  private readonly dates = new DateTracker()

  private bools = 0

  /** `maxDistinct`: past this many distinct values, new ones are no longer counted. */
  constructor(
    readonly name: string,
    readonly dtype: string,
    private readonly maxDistinct = MAX_DISTINCT,
  ) {}

  /** Adds `weight` occurrences of one value (weights let a caller feed counted distinct values). */
  add(value: Cell, weight = 1) {
    if (value === null || (typeof value === 'number' && Number.isNaN(value))) {
      this.nulls += weight
      return
    }
    const seen = this.counts.get(value)
    if (seen !== undefined) this.counts.set(value, seen + weight)
    else if (this.counts.size < this.maxDistinct) {
      this.counts.set(value, weight)
      if (this.samples.length < SAMPLES) this.samples.push(value)
    } else this.capped = true

    if (typeof value === 'number') {
      this.numbers += weight
      if (value < this.min) this.min = value
      if (value > this.max) this.max = value
      this.sum += value * weight
    } else if (typeof value === 'boolean') {
      this.bools += weight
    } else {
      this.texts += weight
      // A value seen before counts like the first time, without testing it again.
      const cls = seen === undefined ? undefined : this.classes.get(value)
      if (cls === undefined) this.classify(value, weight)
      else {
        if (cls & 16) this.dates.matched += weight // a repeat cannot move the range
        this.count(cls, value, weight)
      }
    }
  }

  private readonly classes = new Map<string, number>()

  private classify(value: string, weight: number) {
    let cls = 0
    if (PLAIN_NUMBER.test(value)) cls |= 1
    else {
      if (THOUSANDS_COMMA.test(value)) cls |= 2
      else if (THOUSANDS_DOT.test(value)) cls |= 2 | 32
      if (DECIMAL_COMMA.test(value)) cls |= 4
      if (DECORATED_NUMBER.test(value)) cls |= 8
      if (this.dates.add(value)) {
        cls |= 16
        this.dates.matched += weight - 1
      }
    }
    if (this.classes.size < MAX_DISTINCT) this.classes.set(value, cls)
    this.count(cls, value, weight)
  }

  private count(cls: number, value: string, weight: number) {
    if (cls & 1) {
      this.numericTexts += weight
      this.exampleNumberText ??= value
    } else this.exampleText ??= value
    if (cls & 2) this.thousandsTexts += weight
    if (cls & 32) this.thousandsDots += weight
    if (cls & 7) this.numberish += weight
    if (cls & 4) this.decimalCommaTexts += weight
    if (cls & 8) this.decoratedTexts += weight
  }

  /**
   * The column's profile and warnings. `numbers` gives exact extremes and sum when the caller kept
   * them beside a capped set of distinct values.
   */
  finish(
    options: {
      distinctEstimated?: boolean
      numbers?: { min: number; max: number; sum: number; count: number }
    } = {},
  ): ColumnResult {
    if (options.numbers && options.numbers.count > 0) {
      this.min = options.numbers.min
      this.max = options.numbers.max
      this.sum = options.numbers.sum
      this.numbers = options.numbers.count
    }
    const warnings: string[] = []
    const name = quote(this.name)
    const profile: ColumnProfile = {
      name: this.name,
      dtype: this.dtype,
      nulls: this.nulls,
      distinct: this.counts.size,
      samples: this.samples,
    }
    if (this.capped || options.distinctEstimated) profile.distinctEstimated = true
    if (this.numbers > 0) {
      profile.min = round(this.min)
      profile.max = round(this.max)
      profile.mean = round(this.sum / this.numbers)
      this.sentinels(name, warnings)
    }
    if (this.texts > 0 || this.booleans() > 0) profile.top = this.top()
    if (this.texts > 0) {
      const dates = this.dates.range(this.texts)
      if (dates) {
        profile.dates = { ...dates, asText: true }
        const how = dates.dayFirst
          ? `pd.to_datetime(df[${name}], dayfirst=True)`
          : `pd.to_datetime(df[${name}])`
        warnings.push(`${name} holds dates as text (${dates.min} … ${dates.max}): convert with ${how}`)
      } else this.textWarnings(name, warnings)
    }
    return { profile, warnings }
  }

  private booleans(): number {
    return this.bools
  }

  private top(): { value: string; count: number }[] {
    const entries = [...this.counts].filter(([value]) => typeof value !== 'number')
    entries.sort((a, b) => b[1] - a[1])
    // Booleans as Python prints them.
    const text = (value: string | boolean) =>
      typeof value === 'boolean' ? (value ? 'True' : 'False') : value
    return entries.slice(0, TOP).map(([value, count]) => ({ value: text(value as string | boolean), count }))
  }

  private textWarnings(name: string, warnings: string[]) {
    const texts = this.texts
    // Text that reads like a missing value but that pandas keeps as text.
    const missing = [...this.counts].filter(
      ([value]) => typeof value === 'string' && MISSING_TEXT.has(value.trim().toLowerCase()),
    )
    if (missing.length > 0) {
      const list = missing.map(([value, n]) => `${JSON.stringify(value)} ×${n}`).join(', ')
      const values = missing.map(([value]) => JSON.stringify(value)).join(', ')
      warnings.push(
        `${name} has text that looks like a missing value (${list}), which pandas keeps as text: read with na_values=[${values}] or replace it with NaN`,
      )
    }
    const share = (n: number) => `${Math.round((100 * n) / texts)}%`
    if (this.thousandsTexts > 0 && this.numberish >= texts * 0.9) {
      // 1.234,5 (dots group thousands) or 1,234.5 (commas do).
      const dots = this.thousandsDots * 2 > this.thousandsTexts
      warnings.push(
        dots
          ? `${name} holds numbers with thousands separators as text (1.234,5): read with thousands='.', decimal=',' or convert with pd.to_numeric(df[${name}].str.replace('.', '', regex=False).str.replace(',', '.', regex=False))`
          : `${name} holds numbers with thousands separators as text (1,234.5): read with thousands=',' or convert with pd.to_numeric(df[${name}].str.replace(',', '', regex=False))`,
      )
    } else if (this.decimalCommaTexts > 0 && this.numberish >= texts * 0.9) {
      warnings.push(`${name} holds numbers with a decimal comma as text ('1,5'): read with decimal=','`)
    } else if (this.decoratedTexts > 0 && this.decoratedTexts + this.numericTexts >= texts * 0.9) {
      warnings.push(
        `${name} holds numbers stored as text with symbols such as $ or %: strip them, then pd.to_numeric(df[${name}].str.replace(r'[^0-9.eE+-]', '', regex=True))`,
      )
    } else if (this.numericTexts > 0 && this.numericTexts < texts) {
      const example =
        this.exampleText === undefined ? '' : `, e.g. ${JSON.stringify(this.exampleText.slice(0, 30))}`
      if (this.numericTexts >= texts * 0.5) {
        warnings.push(
          `${name} is mostly numbers (${share(this.numericTexts)}) but has text${example}, so pandas keeps it as object: pd.to_numeric(df[${name}], errors='coerce') turns the text into NaN`,
        )
      } else if (this.numericTexts >= texts * 0.05) {
        warnings.push(
          `${name} mixes numbers (${share(this.numericTexts)}, e.g. ${JSON.stringify(this.exampleNumberText)}) and text${example}`,
        )
      }
    }
  }

  private sentinels(name: string, warnings: string[]) {
    for (const extreme of new Set([this.min, this.max])) {
      if (!SENTINELS.has(extreme)) continue
      const count = this.counts.get(extreme) ?? 0
      // A code rather than a value: the other values sit far from it, or never go below zero.
      let largest = 0
      let allOthersNonNegative = true
      for (const value of this.counts.keys()) {
        if (typeof value !== 'number' || value === extreme) continue
        largest = Math.max(largest, Math.abs(value))
        if (value < 0) allOthersNonNegative = false
      }
      const far = Math.abs(extreme) >= 10 * Math.max(1, largest) || (extreme < 0 && allOthersNonNegative)
      if (!far) continue
      warnings.push(
        `${name} has ${extreme} in ${count} row${count === 1 ? '' : 's'}, likely a code for a missing value: read with na_values={${name}: [${extreme}]} or replace it with NaN`,
      )
    }
  }
}
