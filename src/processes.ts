/**
 * This host's processes, as the records of other processes name them (a blob writer's temporary
 * file, a Jupyter kernel's record): whether the one that wrote a record is still there.
 * @module
 */
import { readFileSync } from 'node:fs'

/** Whether a process of this host is running (one of another user's is: it cannot be signalled). */
export function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * A process as a record names it: `PID-BOOT-TICKS`, its pid with the boot it runs in (the first 8
 * hex digits of the kernel's boot id) and the clock tick it started at (field 22 of
 * /proc/PID/stat). A pid alone is not enough: a restarted container's server often gets its dead
 * predecessor's pid back, and so does a service started early at each boot. Just `PID` where
 * /proc cannot say (not Linux).
 */
export function processMark(pid: number = process.pid): string {
  if (pid === process.pid && ownMark) return ownMark
  const started = startedAt(pid)
  const mark = started ? `${pid}-${started}` : String(pid)
  if (pid === process.pid) ownMark = mark
  return mark
}

/** This process's mark, read once: every blob it writes is named by it. */
let ownMark: string | undefined

/** A mark's shape, for the names that carry one. */
export const PROCESS_MARK = /\d+(?:-[0-9a-f]{8}-\d+)?/

/**
 * Whether the process a mark names is still running: its pid is, and started when the mark says
 * (a mark of just a pid: the pid is running). One that cannot be told (another user's, /proc
 * hidden) counts as running: a record is kept rather than taken from a live process.
 */
export function markRunning(mark: string): boolean {
  const [pid, ...started] = mark.split('-')
  if (!running(Number(pid))) return false
  if (started.length === 0) return true
  const now = startedAt(Number(pid))
  return now === undefined || now === started.join('-')
}

/** `BOOT-TICKS` of a running process, or undefined where /proc does not say. */
function startedAt(pid: number): string | undefined {
  const ticks = startTicks(pid)
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').replace(/-/g, '').slice(0, 8)
    return /^[0-9a-f]{8}$/.test(boot) && ticks ? `${boot}-${ticks}` : undefined
  } catch {
    return undefined
  }
}

/** The clock tick a running process started at since boot (field 22 of /proc/PID/stat), or undefined where /proc does not say. */
export function startTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command's name (field 2) may hold spaces and parentheses: count from after the last ')'.
    const ticks = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
    return ticks && /^\d+$/.test(ticks) ? ticks : undefined
  } catch {
    return undefined
  }
}
