/**
 * One build command as a bounded process: its output as lines (to the build's log), a time limit,
 * an AbortSignal, memory and process limits through a cgroup where the host delegates one, and the
 * last lines kept to say why it failed. Ending it ends its whole process group.
 * @module
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { createCgroup } from '../sandbox/local/cgroup.js'

export interface CommandLimits {
  timeoutMs: number
  memoryBytes?: number
  processes?: number
}

export interface CommandResult {
  code: number | null
  signal: NodeJS.Signals | null
  timedOut: boolean
  aborted: boolean
  /** The memory limit was hit (the kernel's OOM killer fired in its cgroup). */
  outOfMemory: boolean
  /** The last lines it wrote, stdout and stderr together. */
  tail: string[]
}

const TAIL_LINES = 80

/**
 * Runs `command` with exactly `env` (nothing of this process's environment), calling `onLine` for
 * each line it writes. Never rejects for the command's own failure: the result says what happened.
 */
export async function runCommand(
  command: string[],
  options: {
    env?: Record<string, string>
    limits: CommandLimits
    signal?: AbortSignal
    onLine?: (line: string, stream: 'stdout' | 'stderr') => void
    /** Bytes for its standard input. */
    input?: string
  },
): Promise<CommandResult> {
  const [file, ...args] = command as [string, ...string[]]
  const cgroup =
    options.limits.memoryBytes !== undefined
      ? createCgroup(
          `build-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`,
          options.limits.memoryBytes,
          options.limits.processes ?? 4096,
          0,
        )
      : undefined
  // The first process joins the cgroup before it becomes the command, so all it starts are in it.
  const argv = cgroup
    ? [
        '/bin/sh',
        '-c',
        'for f in $ANALYST_BUILD_CGROUP_PROCS; do echo $$ > "$f"; done; exec "$@"',
        'sh',
        file,
        ...args,
      ]
    : [file, ...args]
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    ...options.env,
    ...(cgroup ? { ANALYST_BUILD_CGROUP_PROCS: cgroup.procsFiles.join(' ') } : {}),
  }
  const child = spawn(argv[0] as string, argv.slice(1), {
    env,
    detached: true,
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  })
  if (options.input !== undefined) child.stdin?.end(options.input)
  const tail: string[] = []
  const take = (stream: 'stdout' | 'stderr') => (line: string) => {
    tail.push(line)
    if (tail.length > TAIL_LINES) tail.shift()
    options.onLine?.(line, stream)
  }
  const streams = [
    new Promise<void>((done) =>
      createInterface({ input: child.stdout as NodeJS.ReadableStream })
        .on('line', take('stdout'))
        .on('close', done),
    ),
    new Promise<void>((done) =>
      createInterface({ input: child.stderr as NodeJS.ReadableStream })
        .on('line', take('stderr'))
        .on('close', done),
    ),
  ]
  let timedOut = false
  let aborted = false
  const kill = () => {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL')
    } catch {
      // gone already
    }
  }
  const timer = setTimeout(() => {
    timedOut = true
    kill()
  }, options.limits.timeoutMs)
  const onAbort = () => {
    aborted = true
    kill()
  }
  if (options.signal?.aborted) onAbort()
  options.signal?.addEventListener('abort', onAbort, { once: true })
  try {
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done, fail) => {
      child.once('error', fail)
      child.once('close', (c, s) => done([c, s]))
    })
    await Promise.all(streams)
    return { code, signal, timedOut, aborted, outOfMemory: (cgroup?.oomKills() ?? 0) > 0, tail }
  } finally {
    clearTimeout(timer)
    options.signal?.removeEventListener('abort', onAbort)
    cgroup?.remove()
  }
}
