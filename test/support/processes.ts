/**
 * Processes as the host sees them, from /proc: what a test checks to know that a sandbox's
 * processes are running, or gone.
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs'

/** Processes descended from `root` (pid, parent and command line). @default this process */
export function descendants(root = process.pid): Array<{ pid: number; ppid: number; cmd: string }> {
  const parent = new Map<number, number>()
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      // The command may hold spaces and parentheses: the fields after its closing parenthesis.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
    } catch {
      // gone meanwhile
    }
  }
  const ours = new Set([root])
  let grew = true
  while (grew) {
    grew = false
    for (const [pid, ppid] of parent) {
      if (!ours.has(pid) && ours.has(ppid)) {
        ours.add(pid)
        grew = true
      }
    }
  }
  ours.delete(root)
  return [...ours].map((pid) => {
    let cmd = '?'
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
    } catch {
      // gone meanwhile
    }
    return { pid, ppid: parent.get(pid) as number, cmd }
  })
}

/**
 * The jail shells that zygotes have made for their next sandbox (analyst_zygote.py's run_shell):
 * a child of the zygote's Python with no child of its own. They belong to no sandbox, and
 * outlive every one. (A sandbox's init, also the zygote's child, has its kernel as a child.)
 */
export function waitingShells(processes: Array<{ pid: number; ppid: number; cmd: string }>): Set<number> {
  const zygotePython = (cmd: string | undefined) => /^\S*python\S* .*analyst_zygote\.py/.test(cmd ?? '')
  const byPid = new Map(processes.map((p) => [p.pid, p]))
  const parents = new Set(processes.map((p) => p.ppid))
  // The zygote itself: its Python, not started by another of its kind (its parent is bwrap or us).
  const zygote = (pid: number) =>
    zygotePython(byPid.get(pid)?.cmd) && !zygotePython(byPid.get(byPid.get(pid)?.ppid ?? 0)?.cmd)
  return new Set(
    processes.filter((p) => zygotePython(p.cmd) && !parents.has(p.pid) && zygote(p.ppid)).map((p) => p.pid),
  )
}

/** Whether a process is alive (a zombie counts as gone). */
export function alive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))
  } catch {
    return false
  }
}

/** The program PID 1 of a sandbox runs: the zygote's script when it was forked, else bubblewrap. */
export async function jailInit(sandbox: {
  runCode(code: string): Promise<{ text?: string; error?: { value: string } }>
}): Promise<string> {
  const run = await sandbox.runCode(
    "args = open('/proc/1/cmdline', 'rb').read().split(b'\\0')\n(args[2] if len(args) > 2 and args[2].endswith(b'.py') else args[0]).decode()",
  )
  return run.text ?? String(run.error?.value)
}
