/** Small formatters shared by the components: numbers in the reader's locale (100,000; 100.000). */

/** The browser's locale (its first language), for digits and separators; the words stay English. */
const counts = new Intl.NumberFormat()
const twoDecimals = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 })
const fourDecimals = new Intl.NumberFormat(undefined, { maximumFractionDigits: 4 })
const oneDecimal = new Intl.NumberFormat(undefined, { minimumFractionDigits: 1, maximumFractionDigits: 1 })

export function bytes(size: number): string {
  if (size < 1024) return `${size} B`
  const units = ['KB', 'MB', 'GB', 'TB']
  let value = size / 1024
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${value < 10 ? oneDecimal.format(value) : count(Math.round(value))} ${units[unit]}`
}

export function count(n: number): string {
  return counts.format(n)
}

export function seconds(ms: number): string {
  return ms < 1000 ? `${Math.max(0, Math.round(ms))} ms` : `${oneDecimal.format(ms / 1000)} s`
}

const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' })

/** "just now", "5 minutes ago", "yesterday", then the date. */
export function ago(iso: string, now = Date.now()): string {
  const then = Date.parse(iso)
  if (Number.isNaN(then)) return ''
  const s = Math.round((then - now) / 1000)
  if (Math.abs(s) < 45) return 'just now'
  const m = Math.round(s / 60)
  if (Math.abs(m) < 60) return relative.format(m, 'minute')
  const h = Math.round(m / 60)
  if (Math.abs(h) < 24) return relative.format(h, 'hour')
  const d = Math.round(h / 24)
  if (Math.abs(d) < 7) return relative.format(d, 'day')
  return new Date(then).toLocaleDateString('en', { day: 'numeric', month: 'short', year: 'numeric' })
}

/** A number from a profile, short: 1234.5678 → 1,234.57. */
export function num(value: number): string {
  if (Number.isInteger(value)) return count(value)
  return (Math.abs(value) < 1 ? fourDecimals : twoDecimals).format(value)
}
