/**
 * Shared parts of the hostile-code suite: sandboxes with the guard off against the local backend,
 * a host-side view of a sandbox (its folder, uid, cgroups, processes), marker files the attacks
 * try to reach, and a second sandbox beside the attacker that must stay unaffected.
 *
 * Every case states what must hold: blocked (the attempt fails), bounded (it stops at a limit),
 * or harmless (it succeeds but reaches nothing outside the sandbox).
 * @module
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import {
  type CreateOpts,
  type Execution,
  LocalProvider,
  type RunCodeOpts,
  Sandbox,
  type SandboxLimits,
} from '../../src/index.js'
import { CGROUPS_MARK, getRuntime } from '../../src/sandbox/local/runtime.js'
import { TEMPLATE_HOME, testTemplate } from '../support/templates.js'
import { waitFor } from '../support/wait.js'

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
export const MiB = 1024 ** 2
export const isRoot = process.geteuid?.() === 0

/** Small limits, so that exhaustion cases stop quickly. */
export const SMALL: Partial<SandboxLimits> = {
  memoryBytes: 512 * MiB,
  workspaceBytes: 64 * MiB,
  processes: 64,
  cpuSeconds: 5,
  outputBytes: MiB,
}

/**
 * The template the suite runs in (the vitest projects 'template' and 'bullseye' set it: a test
 * template of test/support/templates.ts), or undefined for the host's Python.
 */
export const TEMPLATE = process.env.ANALYST_TEST_TEMPLATE || undefined

/** No warm pool: each sandbox is started for its case, with exactly the limits asked for. */
export const provider = new LocalProvider({ poolSize: 0, interruptGraceMs: 1000, home: TEMPLATE_HOME })

/**
 * A sandbox for hostile code. The code these cases run would damage the machine outside a jail
 * (kill -1, writes to /etc and /usr, mounts as root), so creation fails closed: the sandbox must be
 * jailed (see assertJailed) or the case stops before running anything.
 */
export async function create(options: CreateOpts = {}): Promise<Sandbox> {
  if (options.isolation !== undefined && options.isolation !== 'sandbox') {
    throw new Error('The hostile-code suite runs only in the jail')
  }
  if (TEMPLATE) await testTemplate(TEMPLATE)
  const sandbox = await Sandbox.create({ provider, ...(TEMPLATE ? { template: TEMPLATE } : {}), ...options })
  await assertJailed(sandbox)
  return sandbox
}

/**
 * Kills the sandbox and throws unless its code runs in the jail: PID 1 is bubblewrap (or, forked,
 * the zygote's init), the project is not visible.
 */
export async function assertJailed(sandbox: Sandbox) {
  const check = await sandbox.runCode(
    `import os\nargs = open('/proc/1/cmdline', 'rb').read().split(b'\\0')\n('bwrap' if args[0] == b'bwrap' or b'/opt/analyst/analyst_zygote.py' in args else args[0].decode()) + ' ' + str(os.path.exists(${JSON.stringify(REPO)}))`,
  )
  if (check.text !== "'bwrap False'") {
    await sandbox.kill()
    throw new Error(
      `Refusing to run hostile code: the sandbox is not jailed (${check.text ?? check.error?.value})`,
    )
  }
  if (isRoot && statSync(join(getRuntime().own, `sb-${sandbox.sandboxId}`, 'work')).uid === 0) {
    await sandbox.kill()
    throw new Error('Refusing to run hostile code: the sandbox runs as root on the host')
  }
}

export const token = (prefix: string) => `${prefix}-${randomBytes(8).toString('hex')}`

/** Python source from an indented template: the common indentation is removed. */
export function py(strings: TemplateStringsArray, ...values: unknown[]): string {
  const text = strings.reduce((all, part, i) => all + part + (i < values.length ? String(values[i]) : ''), '')
  const lines = text.replace(/^\n/, '').replace(/\s+$/, '').split('\n')
  const indent = Math.min(
    ...lines.filter((line) => line.trim()).map((line) => line.match(/^ */)?.[0].length ?? 0),
  )
  return lines.map((line) => line.slice(indent)).join('\n')
}

/**
 * Python that starts a fork bomb in its own session and returns. A shell bomb (b() { b | b & })
 * dies out at the process limit within milliseconds, as each shell exits when its fork fails; in
 * this one every process forks again and again, pausing after a refused fork, so it keeps the
 * process table of the sandbox full and is still forking whenever the test looks, or kills.
 */
export const FORK_BOMB = `import subprocess, sys
subprocess.Popen([sys.executable, '-c', 'import os, time\\nwhile True:\\n    try:\\n        os.fork()\\n    except OSError:\\n        time.sleep(0.05)'],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)`

/** A Python literal for a JS value (JSON is valid Python for strings, numbers, lists). */
export const lit = (value: string | number | string[] | number[]) => JSON.stringify(value)

/**
 * Defined before every probe (a kernel may have been restarted): `attempt(fn)` runs fn and says how
 * it ended, `sh(cmd)` runs a shell command, `report(**values)` hands values back to the test.
 */
const PRELUDE = py`
  import json as _json, os, subprocess, sys
  def attempt(fn, *args):
      try:
          value = fn(*args)
          return {'ok': True, 'value': repr(value)[:2000]}
      except BaseException as e:
          return {'ok': False, 'error': type(e).__name__, 'errno': getattr(e, 'errno', None), 'message': str(e)[:500]}
  def sh(command, timeout=30):
      r = subprocess.run(['sh', '-c', command], capture_output=True, text=True, timeout=timeout)
      return {'code': r.returncode, 'out': r.stdout[-4000:], 'err': r.stderr[-2000:]}
  def report(**values):
      print('REPORT ' + _json.dumps(values, default=repr), flush=True)
`

export interface Attempt {
  ok: boolean
  value?: string
  error?: string
  errno?: number | null
  message?: string
}

export interface Shell {
  code: number
  out: string
  err: string
}

export interface Ran {
  execution: Execution
  stdout: string
  stderr: string
}

export async function run(sandbox: Sandbox, code: string, options: RunCodeOpts = {}): Promise<Ran> {
  const execution = await sandbox.runCode(code, options)
  return { execution, stdout: execution.logs.stdout.join(''), stderr: execution.logs.stderr.join('') }
}

/** Runs code after the prelude and returns what it passed to `report(...)`. */
// biome-ignore lint/suspicious/noExplicitAny: each probe reports its own shape
export async function probe<T = Record<string, any>>(
  sandbox: Sandbox,
  code: string,
  options: RunCodeOpts = {},
): Promise<T> {
  const ran = await run(sandbox, `${PRELUDE}\n${code}`, options)
  const line = ran.stdout.split('\n').find((text) => text.startsWith('REPORT '))
  if (!line) {
    throw new Error(
      `probe reported nothing: ${JSON.stringify(ran.execution.error ?? null)}\n${ran.stdout.slice(-2000)}\n${ran.stderr.slice(-2000)}`,
    )
  }
  return JSON.parse(line.slice('REPORT '.length)) as T
}

/** A blocked attempt: it raised, and nothing came back. */
export function expectBlocked(result: Attempt | undefined, error?: RegExp) {
  expect(result, 'attempt').toBeDefined()
  expect(result?.ok, `expected the attempt to fail, it returned ${result?.value}`).toBe(false)
  if (error) expect(`${result?.error}: ${result?.message}`).toMatch(error)
}

// ---------------------------------------------------------------- the host's view of a sandbox

export interface HostView {
  id: string
  /** `$TMPDIR/analyst-0/<owner>/sb-<id>` */
  dir: string
  /** The workspace, mounted at /home/user in the jail. */
  work: string
  /** The host uid the sandbox's processes run as. */
  uid: number
  /** cgroup folders of the sandbox (memory, pids). */
  cgroups: string[]
}

export function hostView(sandbox: Sandbox): HostView {
  const dir = join(getRuntime().own, `sb-${sandbox.sandboxId}`)
  const work = join(dir, 'work')
  const marks = join(dir, CGROUPS_MARK)
  return {
    id: sandbox.sandboxId,
    dir,
    work,
    uid: statSync(work).uid,
    cgroups: existsSync(marks) ? readFileSync(marks, 'utf8').split('\n').filter(Boolean) : [],
  }
}

export interface HostProcess {
  pid: number
  name: string
  state: string
}

/** Processes (not threads) that run as `uid` on the host, from /proc. */
export function processesOf(uid: number): HostProcess[] {
  const found: HostProcess[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8')
      if (Number(status.match(/^Uid:\s+(\d+)/m)?.[1]) !== uid) continue
      found.push({
        pid: Number(entry),
        name: status.match(/^Name:\s+(.*)$/m)?.[1] ?? '?',
        state: status.match(/^State:\s+(\S+)/m)?.[1] ?? '?',
      })
    } catch {
      // exited while we looked
    }
  }
  return found
}

/** The memory cgroup folder of a sandbox, when it has one. */
export function memoryCgroup(view: HostView): string | undefined {
  return view.cgroups.find((path) => existsSync(join(path, 'memory.limit_in_bytes')))
}

export function readNumber(file: string): number {
  return Number(readFileSync(file, 'utf8').trim())
}

/**
 * After kill(): no process of the sandbox's uid remains, its folder is gone, its cgroups are gone.
 * Waits for the kernel to reap the processes and for the cgroups to empty.
 */
export async function expectGone(view: HostView) {
  const names = () =>
    processesOf(view.uid).map((process) => `${process.pid} ${process.name} (${process.state})`)
  await waitFor(() => processesOf(view.uid).length === 0, {
    what: () => `no process of uid ${view.uid} after kill(); left: ${names().join(', ')}`,
  })
  expect(existsSync(view.dir), `${view.dir} after kill()`).toBe(false)
  await waitFor(() => view.cgroups.every((path) => !existsSync(path)), {
    what: () => `the cgroups to be removed; left: ${view.cgroups.filter(existsSync).join(', ')}`,
  })
}

/** Ends processes that a failing case left behind: only those of this sandbox's uid, by pid. */
export function killLeftovers(uid: number) {
  if (uid < 610_000) return // never a uid that is not a sandbox's
  for (const { pid } of processesOf(uid)) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // gone
    }
  }
}

// ---------------------------------------------------------------- what must stay unaffected

/** Files the attacks try to read or change: in the user's home, the host /tmp and the project. */
export class HostMarkers {
  readonly secret = token('host-secret')
  readonly home = join(homedir(), `.analyst-hostile-${randomBytes(4).toString('hex')}`)
  readonly tmp = join(tmpdir(), `analyst-hostile-${randomBytes(4).toString('hex')}`)
  readonly repo = join(REPO, 'test', 'security', `.hostile-marker-${randomBytes(4).toString('hex')}`)

  get paths(): string[] {
    return [this.home, this.tmp, this.repo]
  }

  create() {
    for (const path of this.paths) writeFileSync(path, this.secret, { mode: 0o644 })
    return this
  }

  assertIntact() {
    for (const path of this.paths) expect(readFileSync(path, 'utf8'), path).toBe(this.secret)
  }

  remove() {
    for (const path of this.paths) rmSync(path, { force: true })
  }
}

/** A second sandbox running beside the attacker, with state and a file of its own. */
export class Neighbor {
  readonly secret = token('neighbor-secret')
  sandbox!: Sandbox
  view!: HostView

  async start() {
    this.sandbox = await create({ limits: SMALL })
    this.view = hostView(this.sandbox)
    await this.sandbox.runCode(`neighbor_state = ${lit(this.secret)}`)
    await this.sandbox.files.write('neighbor.txt', this.secret)
    return this
  }

  /** Its host processes (the jail and the kernel), for attacks that aim at them. */
  pids(): number[] {
    return processesOf(this.view.uid).map((process) => process.pid)
  }

  async assertHealthy() {
    const sum = await this.sandbox.runCode('1 + 1')
    expect(sum.error, 'neighbor runs 1 + 1').toBeUndefined()
    expect(sum.text).toBe('2')
    const state = await this.sandbox.runCode('neighbor_state')
    expect(state.text, 'neighbor keeps its state').toBe(`'${this.secret}'`)
    expect(await this.sandbox.files.read('neighbor.txt'), 'neighbor keeps its file').toBe(this.secret)
    const names = (await this.sandbox.files.list('.')).map((entry) => entry.name)
    expect(names.sort(), 'nothing appeared in the neighbor workspace').toEqual(['data', 'neighbor.txt'])
  }

  async kill() {
    await this.sandbox?.kill()
  }
}

/** The host still starts processes (a fork bomb next door has not used up its process table). */
export function assertHostCanSpawn() {
  const result = spawnSync('/bin/sh', ['-c', 'echo alive'], { encoding: 'utf8' })
  expect(result.stdout).toBe('alive\n')
}

/**
 * Sets up a family: host markers and a neighbor sandbox before, and after every case a check that
 * the host and the neighbor are unaffected.
 */
export function hostileFamily() {
  const family = { markers: new HostMarkers(), neighbor: new Neighbor() }
  beforeAll(async () => {
    family.markers.create()
    await family.neighbor.start()
  })
  afterEach(async () => {
    family.markers.assertIntact()
    assertHostCanSpawn()
    await family.neighbor.assertHealthy()
  })
  afterAll(async () => {
    await family.neighbor.kill()
    family.markers.remove()
  })
  return family
}
