/**
 * A sandbox's home on the host: its folders, uid, cgroup and size-limited workspace, and the spec
 * that starts (and restarts) its kernel. Prepared before a kernel starts, so the warm pool can
 * hold ready homes with running kernels.
 * @module
 */
import { execFile, spawnSync } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import {
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { SandboxLimits } from '../backend.js'
import { SandboxUnavailableError } from '../errors.js'
import { kernelEnv, threadsFor } from '../kernel/env.js'
import { KERNEL_SOURCE_DIRS, kernelSourceFiles } from '../kernel/sources.js'
import { type Cgroup, createCgroup } from './cgroup.js'
import { bwrapArgs, SANDBOX_BIN_DIRS, SANDBOX_HOME, SANDBOX_KERNEL_DIR } from './jail.js'
import type { KernelSpawnSpec } from './kernel.js'
import { canSetHostname } from './probe.js'
import { LOCAL_PYTHON_DIR, type PythonInfo } from './python.js'
import {
  allocateUid,
  CGROUPS_MARK,
  fontCache,
  getRuntime,
  isRoot,
  MOUNT_MARK,
  onExit,
  releaseSandboxDir,
  unmountAsync,
} from './runtime.js'
import { seccompFilter } from './seccomp.js'
import { hostRoot, type SandboxRoot } from './template.js'
import { jailHelper, jailStart } from './template-reach.js'
import { Workspace } from './workspace.js'
import { type ColdStart, forkSpec, forkUnsupported, type Zygote, zygoteFor } from './zygote.js'

export interface HomeConfig {
  /** The host's Python: the zygote's launcher runs it. */
  hostPython: PythonInfo
  /** What the sandbox is rooted in: the host's Python, or a template (template.ts). */
  root: SandboxRoot
  limits: SandboxLimits
  network: boolean
  isolation: 'sandbox' | 'none'
  /** Environment variables given at creation. */
  envs: Record<string, string>
  /** 'fork': from the zygote where it can run (zygote.ts). @default 'spawn' */
  coldStart?: ColdStart
}

export interface Home {
  id: string
  dir: string
  workspace: Workspace
  cgroup?: Cgroup
  spec: KernelSpawnSpec
  /** How its kernel starts: forked from the zygote, or a bubblewrap of its own. */
  started: ColdStart
  /** Removes everything on the host: mount, cgroup, folders, uid. Synchronous (for the exit hook), idempotent. */
  release(): void
  /** The same, unmounting without blocking the event loop. */
  releaseAsync(): Promise<void>
}

/**
 * What a kernel adds to its OOM score (-1000 to 1000): it goes first when memory runs out. The
 * most there is, because it can only be raised: in a Kubernetes pod of the Burstable class every
 * process starts at 1000 - 1000 × request / node memory (938 for deploy/kubernetes' 1 GiB on a
 * 16 GiB node), and a kernel that asked for less would keep the server's score.
 */
export const KERNEL_OOM_SCORE_ADJ = 1000

const MODULES_TO_PRELOAD = ['numpy', 'pandas', 'matplotlib']

const run = promisify(execFile)
let kernelDir: string | undefined
let jailFeatures: { seccompFile?: string; disableUserns: boolean; hostname: boolean } | undefined

/** What this bubblewrap can do, and the seccomp filter file: found once per process. */
function features(): { seccompFile?: string; disableUserns: boolean; hostname: boolean } {
  if (jailFeatures) return jailFeatures
  const help = spawnSync('bwrap', ['--help'], { encoding: 'utf8' })
  const text = `${help.stdout ?? ''}${help.stderr ?? ''}`
  const filter = text.includes('--seccomp') ? seccompFilter() : undefined
  let seccompFile: string | undefined
  if (filter) {
    seccompFile = join(getRuntime().own, 'seccomp.bpf')
    writeFileSync(seccompFile, filter, { mode: 0o644 })
  }
  jailFeatures = {
    seccompFile,
    disableUserns: text.includes('--disable-userns'),
    hostname: canSetHostname(),
  }
  return jailFeatures
}

/**
 * `sudo` where the host has none, for code written for E2B's template (passwordless sudo): there
 * is no root in a sandbox, so it runs the command as the same user, no more rights, and says so.
 */
const SUDO = `#!/bin/sh
echo "sudo: there is no root in this sandbox: the command runs as the same user" >&2
while [ $# -gt 0 ]; do
  case "$1" in
    -u|-g|-p|-C|-D|-R|-T|-U|-r|-t) shift 2 ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || exec /bin/bash -l
exec "$@"
`

/**
 * The kernel's Python files, copied where sandbox uids can read them (the project folder may not
 * be), and bin/ for the end of code's PATH: `python` as `python3`, as E2B's template has it, and `sudo`.
 */
function installKernel(): string {
  if (kernelDir) return kernelDir
  const dir = join(getRuntime().own, 'kernel')
  mkdirSync(join(dir, 'bin'), { recursive: true, mode: 0o755 })
  for (const [name, path] of kernelSourceFiles([...KERNEL_SOURCE_DIRS, LOCAL_PYTHON_DIR])) {
    copyFileSync(path, join(dir, name))
  }
  writeFileSync(join(dir, 'bin', 'python'), '#!/bin/sh\nexec python3 "$@"\n', { mode: 0o755 })
  writeFileSync(join(dir, 'bin', 'sudo'), SUDO, { mode: 0o755 })
  kernelDir = dir
  return dir
}

/** Modules every kernel imports before it is ready: the zygote imports them once for all. */
function preloadFor(python: PythonInfo): string[] {
  return MODULES_TO_PRELOAD.filter((name) => python.modules[name]).concat(
    python.modules.matplotlib ? ['matplotlib.pyplot'] : [],
  )
}

/** The zygote of this root (the host's Python by default), started if it is not running (zygote.ts). */
export function sandboxZygote(hostPython: PythonInfo, root?: SandboxRoot): Promise<Zygote> {
  const rooted = root ?? hostRoot(hostPython, fontCache(hostPython))
  return zygoteFor(hostPython, rooted, installKernel(), preloadFor(rooted.python))
}

/** Whether a home of this config may fork: a jail without network, where zygotes run (as root). */
function forkable(config: HomeConfig): boolean {
  return (
    config.isolation === 'sandbox' && config.coldStart === 'fork' && !config.network && !forkUnsupported()
  )
}

/** Processes this user runs now: without a uid of its own, the sandbox's process limit comes on top. */
function processesOfThisUser(): number {
  const uid = process.getuid?.() ?? 0
  let count = 0
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      if (statSync(`/proc/${pid}`).uid === uid) count += readdirSync(`/proc/${pid}/task`).length
    } catch {
      // gone
    }
  }
  return count
}

export async function prepareHome(config: HomeConfig): Promise<Home> {
  const runtime = getRuntime()
  const id = randomBytes(6).toString('hex')
  const dir = join(runtime.own, `sb-${id}`)
  const work = join(dir, 'work')
  const data = join(dir, 'data')
  mkdirSync(dir, { mode: isRoot ? 0o711 : 0o700 })
  mkdirSync(work, { mode: 0o700 })
  mkdirSync(data, { mode: 0o755 })
  const sandboxed = config.isolation === 'sandbox'
  const cleanups: Array<() => void> = []
  let released = false
  const release = () => {
    if (released) return
    released = true
    // Processes, mount and folder first: the uid is given back only when nothing of it runs.
    releaseSandboxDir(dir)
    for (const cleanup of cleanups.reverse()) {
      try {
        cleanup()
      } catch {
        // best effort: the runtime sweep retries what is left
      }
    }
  }
  const unregister = onExit(release)
  cleanups.push(unregister)
  try {
    // Forked sandboxes have no network namespace with the host's network: those spawn. A
    // template's sandboxes fork from its own zygote, which has no host privileges (zygote.ts).
    const python = config.root.python
    const zygote = forkable(config)
      ? await sandboxZygote(config.hostPython, config.root).catch(() => undefined)
      : undefined
    let owner: { uid: number; gid: number } | undefined
    let cgroup: Cgroup | undefined
    if (sandboxed && isRoot) {
      const { uid, release: releaseUid } = allocateUid()
      cleanups.push(releaseUid)
      owner = { uid, gid: uid }
      // Asynchronously: under load a mount can take a while, and the event loop serves others meanwhile.
      // A forked sandbox's launcher mounts it without starting a process.
      const size = `size=${config.limits.workspaceBytes},uid=${uid},gid=${uid},mode=0700`
      // Marked before the mount: if this process dies in between (kill -9), the sweep still unmounts it.
      const mark = join(dir, MOUNT_MARK)
      writeFileSync(mark, '')
      const mounting = zygote
        ? zygote.launcher.mount(work, size)
        : run('mount', ['-t', 'tmpfs', '-o', `${size},nosuid,nodev`, 'tmpfs', work]).then(
            () => true,
            () => false,
          )
      // The cgroup is made while the mount is under way in another process (they need nothing of
      // each other); the mount is awaited before anything else, a failure included.
      try {
        // tmpfs pages count as the sandbox's memory: the cgroup allows for a full workspace.
        cgroup = createCgroup(
          id,
          {
            memoryBytes: config.limits.memoryBytes + config.limits.workspaceBytes,
            processes: config.limits.processes,
            milliCpus: config.limits.milliCpus,
          },
          uid,
          { starting: true },
        )
        if (cgroup) {
          writeFileSync(join(dir, CGROUPS_MARK), cgroup.paths.join('\n'))
          const group = cgroup
          cleanups.push(() => group.remove())
        }
      } finally {
        if (!(await mounting)) {
          rmSync(mark, { force: true })
          chownSync(work, uid, uid)
        }
      }
    }
    if (!cgroup && config.limits.milliCpus > 0) {
      throw new SandboxUnavailableError(
        'A CPU quota is kept by a cgroup, which Analyst makes only when it runs as root with isolation on',
        { hint: 'Leave the CPU quota out, or run Analyst as root.' },
      )
    }
    if (sandboxed) {
      mkdirSync(join(work, 'data'), { mode: 0o755 }) // where the jail mounts data/
      if (owner) chownSync(join(work, 'data'), owner.uid, owner.gid)
    } else {
      symlinkSync(data, join(work, 'data'))
    }
    const workspace = new Workspace(work, data, owner)
    cleanups.push(() => workspace.close())
    const kernelLimits: Record<string, number> = {
      memoryBytes: config.limits.memoryBytes,
      fileSizeBytes: config.limits.fileSizeBytes,
      openFiles: config.limits.openFiles,
      cpuSeconds: config.limits.cpuSeconds,
      // The OOM killer's first choice is a kernel, never the host process (which lowers its own).
      oomScoreAdj: KERNEL_OOM_SCORE_ADJ,
    }
    // RLIMIT_NPROC counts every process of the real uid: exact with a uid of our own, else on top of what runs.
    if (owner) kernelLimits.processes = config.limits.processes
    else if (sandboxed) kernelLimits.processes = config.limits.processes + processesOfThisUser()
    const kernelConfigObject = {
      limits: kernelLimits,
      outputCap: config.limits.outputBytes,
      resultCap: config.limits.resultBytes,
      preload: preloadFor(python),
      ...(config.root.start ? { start: config.root.start } : {}),
      ...(config.root.workdir ? { workdir: config.root.workdir } : {}),
      // For the %pip hint (analyst_pip.py): what to do about a package the template lacks.
      ...(config.root.template
        ? { template: config.root.template.names[0] ?? config.root.template.id.slice(0, 12) }
        : {}),
    }
    const kernelConfig = JSON.stringify(kernelConfigObject)
    const source = installKernel()
    const started: ColdStart = zygote && owner ? 'fork' : 'spawn'
    // One per sandbox, kept across its kernel's restarts: a resumed sandbox is a new one, a new boot.
    const bootId = randomUUID()
    // The template's variables under the caller's.
    const envs = { ...config.root.env, ...config.envs }
    const threads = threadsFor(config.limits.milliCpus)
    let spec: KernelSpawnSpec
    if (zygote && owner) {
      spec = forkSpec(() => sandboxZygote(config.hostPython, config.root), {
        work,
        data,
        uid: owner.uid,
        gid: owner.gid,
        tmpBytes: config.limits.workspaceBytes,
        bootId,
        env: kernelEnv(SANDBOX_HOME, envs, process.env, SANDBOX_BIN_DIRS, threads),
        // The template's start step ran once in its zygote: the kernel starts from its state.
        kernel: { ...kernelConfigObject, start: undefined },
        cgroupProcs: cgroup?.procsFiles ?? [],
      })
    } else if (sandboxed) {
      const jail = features()
      const bootIdFile = join(dir, 'boot_id')
      writeFileSync(bootIdFile, `${bootId}\n`, { mode: 0o644 })
      const command = [python.executable, '-s', `${SANDBOX_KERNEL_DIR}/analyst_kernel.py`, kernelConfig]
      const bwrap = [
        'bwrap',
        ...bwrapArgs(
          {
            python,
            rootfs: config.root.rootfs,
            binds: config.root.binds,
            workspace: work,
            data,
            kernelDir: source,
            etc: runtime.etc,
            fontCache: config.root.fontCache,
            network: config.network,
            tmpBytes: config.limits.workspaceBytes,
            bootIdFile,
            seccomp: jail.seccompFile !== undefined,
            disableUserns: jail.disableUserns,
            hostname: jail.hostname,
          },
          command,
        ),
      ]
      // As the sandbox's uid; a template in a closed folder through analyst_userns.py (template-reach.ts).
      const jailed = owner
        ? jailStart(config.root.reach, owner, bwrap, jailHelper(config.hostPython))
        : { command: bwrap }
      spec = {
        command: jailed.command[0] as string,
        args: jailed.command.slice(1),
        env: kernelEnv(SANDBOX_HOME, envs, process.env, SANDBOX_BIN_DIRS, threads),
        uid: jailed.uid,
        gid: jailed.gid,
        cgroupProcs: cgroup?.procsFiles,
        infoFd: true,
        seccompFile: jail.seccompFile,
        maxMessageBytes: 64 * 1024 * 1024,
      }
    } else {
      // No jail: the kernel runs as this user, with data/ linked into the workspace.
      const scratch = join(dir, 'tmp')
      mkdirSync(scratch)
      const env = kernelEnv(work, envs, process.env, [join(source, 'bin')], threads)
      Object.assign(env, {
        PATH: env.PATH?.replace(SANDBOX_KERNEL_DIR, source),
        TMPDIR: scratch,
        MPLCONFIGDIR: join(scratch, '.matplotlib'),
        XDG_CACHE_HOME: join(scratch, '.cache'),
        XDG_CONFIG_HOME: join(scratch, '.config'),
      })
      spec = {
        command: python.executable,
        args: ['-s', join(source, 'analyst_kernel.py'), kernelConfig],
        env,
        cwd: work,
        processGroup: true,
        maxMessageBytes: 64 * 1024 * 1024,
      }
    }
    const releaseAsync = async () => {
      if (released) return
      workspace.close()
      if (existsSync(join(dir, MOUNT_MARK))) {
        await unmountAsync(work)
        rmSync(join(dir, MOUNT_MARK), { force: true })
      }
      release()
    }
    return { id, dir, workspace, cgroup, spec, started, release, releaseAsync }
  } catch (error) {
    release()
    throw error
  }
}
