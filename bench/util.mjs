// Shared by the benchmarks: percentiles, a markdown table, and the machine's description.
import { readdirSync, readFileSync } from 'node:fs'
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

// Idle memory: proportional set size (shared pages split between sharers) of every process this
// Node process started, directly or not (launchers, bubblewraps, inits, kernels, the zygote),
// minus what ran before, per sandbox. So the fork path pays for its zygote and launchers here.
export function descendants() {
  const parent = new Map()
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      parent.set(Number(pid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
    } catch {
      // exited
    }
  }
  const mine = new Set([process.pid])
  let grew = true
  while (grew) {
    grew = false
    for (const [pid, ppid] of parent) {
      if (!mine.has(pid) && mine.has(ppid)) {
        mine.add(pid)
        grew = true
      }
    }
  }
  mine.delete(process.pid)
  return [...mine]
}
export function pssKiB(pids) {
  let total = 0
  for (const pid of pids) {
    try {
      total += Number(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+)/m)?.[1] ?? 0)
    } catch {
      // exited
    }
  }
  return total
}

/** The load averages (1, 5, 15 minutes), for a section's "load before → after". */
export function loadAverage() {
  return loadavg()
    .map((value) => value.toFixed(1))
    .join(', ')
}
