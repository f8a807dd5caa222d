// Shared by the benchmarks: percentiles, a markdown table, and the machine's description.
import { readFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'

export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[index]
}

export function table(header, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}

export function machine() {
  let model = cpus()[0]?.model ?? 'unknown CPU'
  try {
    model = readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.+)/)?.[1] ?? model
  } catch {
    // not Linux
  }
  const date = new Date().toISOString().slice(0, 10)
  return `${date}, ${cpus().length} cores (${model.trim()}), ${Math.round(totalmem() / 1024 ** 3)} GiB, Node ${process.versions.node}`
}

/** The load averages (1, 5, 15 minutes), for a section's "load before → after". */
export function loadAverage() {
  return loadavg()
    .map((value) => value.toFixed(1))
    .join(', ')
}
