/**
 * The sandbox template (zygote): one Python per interpreter, started once in its own jail with
 * numpy, pandas and matplotlib imported, that forks each sandbox's kernel in a few milliseconds.
 * How a forked sandbox keeps the isolation of a bubblewrap-started one is written at the top of
 * python/analyst_zygote.py. Root only (the template builds namespaces and changes uids); where it
 * cannot run, sandboxes start the usual way and `analyst doctor` says why.
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { SandboxUnavailableError } from '../errors.js'
import { bwrapArgs, kernelEnv, SANDBOX_HOME, SANDBOX_KERNEL_DIR } from './jail.js'
import type { KernelSpawnSpec } from './kernel.js'
import type { PythonInfo } from './python.js'
import { fontCache, getRuntime, isRoot, onExit } from './runtime.js'
import { seccompFilter } from './seccomp.js'

/** How sandboxes start: forked from the template, or a new bubblewrap and Python each (spawn). */
export type ColdStart = 'fork' | 'spawn'

export interface Template {
  socket: string
  process: ChildProcess
}

const templates = new Map<string, Promise<Template>>()
/** A template that failed to start is not tried again before this long: creates spawn meanwhile. */
const RETRY_AFTER_MS = 60_000
const failures = new Map<string, { error: Error; at: number }>()

/** Why forking cannot work on this machine at all, or undefined when it may. */
export function forkUnsupported(): string | undefined {
  if (!isRoot) return 'sandboxes are forked from a template only when Analyst runs as root'
  if (!seccompFilter(undefined, { denyUserns: true }))
    return `no seccomp table for ${process.arch}: forked sandboxes could create user namespaces`
  return undefined
}

/** The running template for this interpreter, started (once) when needed. */
export function templateFor(python: PythonInfo, kernelDir: string, preload: string[]): Promise<Template> {
  const key = python.executable
  const failed = failures.get(key)
  if (failed && Date.now() - failed.at < RETRY_AFTER_MS) return Promise.reject(failed.error)
  let template = templates.get(key)
  if (!template) {
    template = startTemplate(python, kernelDir, preload)
    templates.set(key, template)
    template.then(
      (started) =>
        started.process.once('exit', () => {
          if (templates.get(key) === template) templates.delete(key) // rebuilt by the next create
        }),
      (error: Error) => {
        failures.set(key, { error, at: Date.now() })
        templates.delete(key)
      },
    )
  }
  return template
}

async function startTemplate(python: PythonInfo, kernelDir: string, preload: string[]): Promise<Template> {
  const reason = forkUnsupported()
  if (reason) throw new SandboxUnavailableError(reason)
  const runtime = getRuntime()
  // One folder per interpreter, the same for the template that replaces a dead one: the specs of
  // running sandboxes name its socket, and their kernels restart through it.
  const key = createHash('sha256').update(python.executable).digest('hex').slice(0, 12)
  const socketDir = join(runtime.own, `zygote-${key}`)
  mkdirSync(socketDir, { recursive: true, mode: 0o700 })
  const filter = seccompFilter(undefined, { denyUserns: true }) as Buffer
  const config = JSON.stringify({ preload, seccomp: filter.toString('hex') })
  const args = bwrapArgs(
    {
      python,
      workspace: '',
      data: '',
      kernelDir,
      etc: runtime.etc,
      fontCache: fontCache(python),
      network: false,
      tmpBytes: 64 * 1024 * 1024,
      seccomp: false,
      disableUserns: false,
      templateSocketDir: socketDir,
    },
    [python.executable, '-s', `${SANDBOX_KERNEL_DIR}/analyst_zygote.py`, config],
  )
  const child = spawn('bwrap', args, {
    env: kernelEnv(SANDBOX_HOME),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const forget = onExit(() => child.kill('SIGKILL'))
  child.once('exit', forget)
  let output = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-4096)
  })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => fail('did not start within 60 s'), 60_000)
    const fail = (why: string) => {
      clearTimeout(timer)
      child.kill('SIGKILL')
      reject(new SandboxUnavailableError(`The sandbox template ${why}: ${output.trim().slice(-500)}`))
    }
    child.once('error', (error) => fail(error.message))
    child.once('exit', (code, signal) => fail(`exited (${signal ?? `code ${code}`})`))
    let seen = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      seen += chunk.toString('utf8')
      if (seen.includes('ready\n')) {
        clearTimeout(timer)
        child.removeAllListeners('exit')
        child.once('exit', forget)
        resolve()
      }
    })
  })
  // An idle template must not keep the host process running.
  child.unref()
  for (const stream of [child.stdout, child.stderr]) (stream as unknown as { unref(): void }).unref()
  return { socket: join(socketDir, 'socket'), process: child }
}

/** Everything the launcher needs to ask the template for one sandbox. */
export interface ForkRequest {
  launcher: string
  work: string
  data: string
  uid: number
  gid: number
  tmpBytes: number
  env: Record<string, string>
  kernel: unknown
  cgroupProcs: string[]
}

/** The spec of a forked kernel: the launcher, spoken to like bubblewrap (pipes on 1-4, info on 5). */
export function forkSpec(python: PythonInfo, template: Template, request: ForkRequest): KernelSpawnSpec {
  const { launcher, env, work, data, cgroupProcs, ...rest } = request
  return {
    command: python.executable,
    args: ['-I', '-S', launcher, template.socket, work, data, cgroupProcs.join('\n'), JSON.stringify(rest)],
    env,
    infoFd: true,
    maxMessageBytes: 64 * 1024 * 1024,
  }
}

/** Stops every template (tests, and hosts that want their memory back). */
export async function stopTemplates(): Promise<void> {
  const running = [...templates.values()]
  templates.clear()
  for (const template of running) {
    const started = await template.catch(() => undefined)
    if (started && started.process.exitCode === null && started.process.signalCode === null) {
      const exited = new Promise((resolve) => started.process.once('exit', resolve))
      started.process.ref() // an idle template is unref'd: the wait for its exit must hold the loop
      started.process.kill('SIGKILL')
      await exited
    }
  }
}
