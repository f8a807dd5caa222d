/**
 * Small text helpers shared by the eval's terminal output and its HTML report.
 * @module
 */

export function percent(fraction: number): string {
  return `${(fraction * 100).toFixed(2)}%`
}

/** 950 → 950, 12_300 → 12.3k, 1_234_567 → 1.23M. */
export function count(value: number): string {
  if (value >= 1e6) return `${(value / 1e6).toFixed(2)}M`
  if (value >= 1e4) return `${(value / 1e3).toFixed(1)}k`
  return String(value)
}

/** 65_000 → 1:05, 3_725_000 → 1:02:05. */
export function clock(ms: number): string {
  const total = Math.floor(ms / 1000)
  const h = Math.floor(total / 3600)
  const m = Math.floor((total % 3600) / 60)
  const s = String(total % 60).padStart(2, '0')
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`
}

/** A fixed-width text table: the first column left-aligned, the others right-aligned. */
export function textTable(rows: string[][]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? []
  return rows
    .map((row) =>
      row
        .map((cell, column) =>
          column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0),
        )
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

/** The ids as a short list: `3, 5, 9 … (40 more)`. */
export function idList(ids: number[], max = 30): string {
  const shown = ids.slice(0, max).join(', ')
  return ids.length > max ? `${shown} … (${ids.length - max} more)` : shown
}
