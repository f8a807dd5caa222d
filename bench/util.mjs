// Shared by the benchmarks: percentiles, a markdown table, and the machine's description.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

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

// The server side of the E2B benchmarks, in a child process as a real client would meet it:
// `analyst serve` from a dist folder with a warm pool of one. Its parent asks over IPC for the
// pool to be refilled ('warm'), for the server's CPU time so far ('cpu') and for the end ('close').
export async function serveE2B(dist, token) {
  const { LocalProvider } = await import(pathToFileURL(join(dist, 'index.js')).href)
  const { startServer } = await import(pathToFileURL(join(dist, 'server/index.js')).href)
  const home = mkdtempSync(join(tmpdir(), 'analyst-bench-e2b-'))
  const provider = new LocalProvider({ poolSize: 1 })
  const server = await startServer({ port: 0, home, tokens: [token], provider })
  await provider.warm()
  process.on('message', async (message) => {
    if (message === 'warm') {
      await provider.warm()
      process.send('warm')
    } else if (message === 'cpu') {
      const { user, system } = process.cpuUsage()
      process.send({ cpu: user + system })
    } else if (message === 'close') {
      await server.close()
      await provider.close()
      rmSync(home, { recursive: true, force: true })
      process.exit(0)
    }
  })
  process.send({ url: server.url })
}
