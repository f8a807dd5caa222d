/**
 * pandas' dtype inference for a column of CSV fields (read_csv, C engine, pandas 1.5–2.x): missing
 * values first, then int64 (uint64 past int64's range), float64, bool, and object for the rest.
 * Each rule here was checked against pandas itself (see infer.test.ts and test/data/dabench.test.ts).
 * @module
 */

/**
 * read_csv's default na_values (pandas/_libs/parsers.pyx STR_NA_VALUES) in pandas 1.5, the sandbox's
 * (Debian 12); pandas 2.0 added 'None'. Matched exactly, not trimmed.
 */
export const NA_VALUES: ReadonlySet<string> = new Set([
  '',
  '#N/A',
  '#N/A N/A',
  '#NA',
  '-1.#IND',
  '-1.#QNAN',
  '-NaN',
  '-nan',
  '1.#IND',
  '1.#QNAN',
  '<NA>',
  'N/A',
  'NA',
  'NULL',
  'NaN',
  'n/a',
  'nan',
  'null',
])

const TRUE_VALUES = new Set(['True', 'TRUE', 'true'])
const FALSE_VALUES = new Set(['False', 'FALSE', 'false'])
const INFINITIES = new Set(['inf', '+inf', '-inf', 'infinity', '+infinity', '-infinity'])

export interface NumberFormat {
  /** The decimal mark: '.' (default) or ','. */
  decimal: string
  /** The thousands separator pandas was told about, if any. */
  thousands?: string
}

export const DEFAULT_NUMBER_FORMAT: NumberFormat = { decimal: '.' }

// C's isspace: space, \t, \n, \v, \f, \r. pandas skips these around numbers.
const WS = '[ \\t\\n\\v\\f\\r]*'

function escapeRegExp(char: string): string {
  return char.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

interface Patterns {
  integer: RegExp
  float: RegExp
}

const patternCache = new Map<string, Patterns>()

function patterns(format: NumberFormat): Patterns {
  const key = `${format.decimal}|${format.thousands ?? ''}`
  let found = patternCache.get(key)
  if (!found) {
    const t = format.thousands ? escapeRegExp(format.thousands) : ''
    const digits = t ? `\\d(?:\\d|${t}(?=\\d))*` : '\\d+'
    const d = escapeRegExp(format.decimal)
    found = {
      integer: new RegExp(`^${WS}[+-]?${digits}${WS}$`),
      float: new RegExp(`^${WS}[+-]?(?:${digits}(?:${d}\\d*)?|${d}\\d+)(?:[eE][+-]?\\d+)?${WS}$`),
    }
    patternCache.set(key, found)
  }
  return found
}

export function isNA(value: string): boolean {
  return NA_VALUES.has(value)
}

export function isIntegerText(value: string, format: NumberFormat = DEFAULT_NUMBER_FORMAT): boolean {
  return patterns(format).integer.test(value)
}

export function isFloatText(value: string, format: NumberFormat = DEFAULT_NUMBER_FORMAT): boolean {
  return patterns(format).float.test(value) || INFINITIES.has(value.toLowerCase())
}

export function isBoolText(value: string): boolean {
  return TRUE_VALUES.has(value) || FALSE_VALUES.has(value)
}

/** The number a numeric field holds (NaN when it holds none). */
export function toNumber(value: string, format: NumberFormat = DEFAULT_NUMBER_FORMAT): number {
  let text = value.trim()
  if (format.thousands) text = text.split(format.thousands).join('')
  if (format.decimal !== '.') text = text.replace(format.decimal, '.')
  const number = Number(text)
  if (!Number.isNaN(number) && text !== '') return number
  const lower = text.toLowerCase()
  if (INFINITIES.has(lower))
    return lower.startsWith('-') ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY
  return Number.NaN
}

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const UINT64_MAX = 2n ** 64n - 1n

function toBigInt(value: string, format: NumberFormat): bigint {
  let text = value.trim()
  if (format.thousands) text = text.split(format.thousands).join('')
  return BigInt(text.startsWith('+') ? text.slice(1) : text)
}

export type Dtype = 'int64' | 'uint64' | 'float64' | 'bool' | 'object'

/** What one pass over a column's fields learns: enough to name the dtype pandas gives it. */
export class DtypeTracker {
  nulls = 0
  count = 0
  private allInt = true
  private allFloat = true
  private allBool = true
  private intRange: 'int64' | 'uint64' | 'none' = 'int64'
  private hasNegative = false
  private readonly integer: RegExp
  private readonly float: RegExp

  constructor(private readonly format: NumberFormat = DEFAULT_NUMBER_FORMAT) {
    const p = patterns(format)
    this.integer = p.integer
    this.float = p.float
  }

  /** Records one field; returns whether it was missing. */
  add(value: string): boolean {
    this.count++
    if (NA_VALUES.has(value)) {
      this.nulls++
      return true
    }
    if (this.allInt) {
      if (this.integer.test(value)) {
        // 15 digits always fit in int64; only longer ones need the exact check.
        if (value.length > 15) this.checkRange(value)
        else if (value.includes('-')) this.hasNegative = true
        this.allBool = false
        return false
      }
      this.allInt = false
    }
    if (this.allFloat && !(this.float.test(value) || INFINITIES.has(value.toLowerCase())))
      this.allFloat = false
    if (this.allBool && !(TRUE_VALUES.has(value) || FALSE_VALUES.has(value))) this.allBool = false
    return false
  }

  private checkRange(value: string) {
    const number = toBigInt(value, this.format)
    if (number < 0n) this.hasNegative = true
    if (number < INT64_MIN || number > UINT64_MAX) this.intRange = 'none'
    else if (number > INT64_MAX && this.intRange === 'int64') this.intRange = 'uint64'
  }

  get dtype(): Dtype {
    if (this.count === 0) return 'object' // a header with no rows
    const values = this.count - this.nulls
    if (values === 0) return 'float64'
    if (this.allInt) {
      if (this.nulls > 0) return 'float64'
      if (this.intRange === 'int64') return 'int64'
      if (this.intRange === 'uint64' && !this.hasNegative) return 'uint64'
      return 'object'
    }
    if (this.allFloat) return 'float64'
    if (this.allBool) return this.nulls > 0 ? 'object' : 'bool'
    return 'object'
  }
}
