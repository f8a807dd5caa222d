/**
 * Recognizes dates written as text (pandas leaves them as `object` unless told to parse them) and
 * keeps their range. Only unambiguous, common shapes count: ISO and year-first dates, day/month/year
 * or month/day/year, and dates with month names.
 * @module
 */

const TIME = String.raw`(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?\s*(?:Z|[+-]\d{2}:?\d{2}|[AaPp][Mm])?)?`
const YEAR_FIRST = new RegExp(String.raw`^(\d{4})([-/.])(\d{1,2})\2(\d{1,2})${TIME}$`)
const YEAR_LAST = new RegExp(String.raw`^(\d{1,2})([-/.])(\d{1,2})\2(\d{4}|\d{2})${TIME}$`)
const DAY_MONTH_NAME = /^(\d{1,2})[ -]([A-Za-z]{3,9})\.?,?[ -](\d{4})$/
const MONTH_NAME_DAY = /^([A-Za-z]{3,9})\.? (\d{1,2}),? (\d{4})$/
const YEAR_MONTH = /^(\d{4})-(\d{2})$/
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0')
}

function month(name: string): number {
  const index = MONTHS.indexOf(name.slice(0, 3).toLowerCase())
  return index + 1
}

function year(text: string): number {
  const y = Number(text)
  if (text.length === 2) return y < 69 ? 2000 + y : 1900 + y
  return y
}

function key(y: number, m: number, d: number, h?: string, min?: string, s?: string): string | undefined {
  if (m < 1 || m > 12 || d < 1 || d > 31) return undefined
  const date = `${pad(y, 4)}-${pad(m)}-${pad(d)}`
  if (h === undefined) return date
  return `${date} ${pad(Number(h))}:${min}${s === undefined ? '' : `:${s}`}`
}

function keep(range: { min?: string; max?: string }, k: string) {
  if (range.min === undefined || k < range.min) range.min = k
  if (range.max === undefined || k > range.max) range.max = k
}

/** Counts the values of a text column that are dates, and keeps their range. */
export class DateTracker {
  matched = 0
  private yearFirst: { min?: string; max?: string } = {}
  private monthFirst: { min?: string; max?: string } = {}
  private dayFirst: { min?: string; max?: string } = {}
  private firstOver12 = false
  private secondOver12 = false
  private yearLast = 0

  add(value: string): boolean {
    const text = value.trim()
    if (text.length < 7 || text.length > 40) return false
    const c = text.charCodeAt(0)
    if (c >= 48 && c <= 57) {
      let m = YEAR_FIRST.exec(text)
      if (m) {
        const k = key(Number(m[1]), Number(m[3]), Number(m[4]), m[5], m[6], m[7])
        if (!k) return false
        keep(this.yearFirst, k)
        this.matched++
        return true
      }
      m = YEAR_LAST.exec(text)
      if (m) {
        const a = Number(m[1])
        const b = Number(m[3])
        const y = year(m[4] as string)
        const mdy = key(y, a, b, m[5], m[6], m[7])
        const dmy = key(y, b, a, m[5], m[6], m[7])
        if (!mdy && !dmy) return false
        if (a > 12) this.firstOver12 = true
        if (b > 12) this.secondOver12 = true
        if (mdy) keep(this.monthFirst, mdy)
        if (dmy) keep(this.dayFirst, dmy)
        this.yearLast++
        this.matched++
        return true
      }
      m = YEAR_MONTH.exec(text)
      if (m) {
        const k = key(Number(m[1]), Number(m[2]), 1)
        if (!k) return false
        keep(this.yearFirst, k.slice(0, 7))
        this.matched++
        return true
      }
      m = DAY_MONTH_NAME.exec(text)
      if (m) {
        const k = key(Number(m[3]), month(m[2] as string), Number(m[1]))
        if (!k) return false
        keep(this.yearFirst, k)
        this.matched++
        return true
      }
      return false
    }
    const m = MONTH_NAME_DAY.exec(text)
    if (m) {
      const k = key(Number(m[3]), month(m[1] as string), Number(m[2]))
      if (!k) return false
      keep(this.yearFirst, k)
      this.matched++
      return true
    }
    return false
  }

  /** The range, when most values were dates; `dayFirst` when day/month/year is the only reading. */
  range(values: number): { min: string; max: string; dayFirst?: boolean } | undefined {
    if (values === 0 || this.matched < values * 0.95) return undefined
    if (this.firstOver12 && this.secondOver12) return undefined // neither reading fits every value
    const ranges = [this.yearFirst]
    const dayFirst = this.yearLast > 0 && this.firstOver12
    if (this.yearLast > 0) ranges.push(dayFirst ? this.dayFirst : this.monthFirst)
    let min: string | undefined
    let max: string | undefined
    for (const r of ranges) {
      if (r.min !== undefined && (min === undefined || r.min < min)) min = r.min
      if (r.max !== undefined && (max === undefined || r.max > max)) max = r.max
    }
    if (min === undefined || max === undefined) return undefined
    return dayFirst ? { min, max, dayFirst } : { min, max }
  }
}
