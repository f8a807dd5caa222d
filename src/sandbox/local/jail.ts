/**
 * The jail: bubblewrap arguments and the kernel's environment. Pure functions, so what the jail
 * lets in can be read (and tested) in one place.
 * @module
 */
import { existsSync, lstatSync, readdirSync, readlinkSync } from 'node:fs'
import { MPL_CONFIG_DIR } from '../kernel/env.js'
import { SANDBOX_HOME } from '../paths.js'
import type { PythonInfo } from './python.js'

/** Inside the sandbox. */
export { SANDBOX_HOME }
export const SANDBOX_DATA = `${SANDBOX_HOME}/data`
export const SANDBOX_KERNEL_DIR = '/opt/analyst'
/** The engine's own programs in the jail (`python`, where the system has only python3), searched last. */
export const SANDBOX_BIN_DIRS = [`${SANDBOX_KERNEL_DIR}/bin`]
/** bubblewrap writes `{"child-pid": N}` here. fds 3 and 4 are the kernel's message pipes. */
export const INFO_FD = 5
/** bubblewrap reads the seccomp filter from here. */
export const SECCOMP_FD = 6

/**
 * What of /etc the Python stack needs; everything else of /etc stays out. From the host's /etc, or
 * from the template's own in a sandbox rooted in one (never the host's there).
 */
const ETC_ALLOWED = [
  '/etc/alternatives', // Debian's BLAS/LAPACK are chosen through these links
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/localtime',
  '/etc/timezone',
  '/etc/matplotlibrc',
  '/etc/mime.types',
  '/etc/fonts',
  '/etc/python3',
  '/etc/python3.11',
  '/etc/python3.12',
  '/etc/python3.13',
  '/etc/R', // R_HOME/etc links here (Renviron: the library paths)
]
/** Needed only when code may use the network. */
const ETC_NETWORK = [
  '/etc/resolv.conf',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/nsswitch.conf',
  '/etc/gai.conf',
]

export interface JailSpec {
  python: PythonInfo
  /**
   * A template's root file system (a host folder): its /usr, top-level links, /opt entries and
   * allowed /etc, read-only, instead of the host's. The host's Python paths are then not bound.
   */
  rootfs?: string
  /** More host folders bound read-only (a template's venv over the host's Python, at /opt/venv). */
  binds?: Array<{ from: string; to: string }>
  /** Host folders. */
  workspace: string
  data: string
  kernelDir: string
  /** Host folder with the jail's passwd, group and hosts. */
  etc: string
  fontCache?: string
  network: boolean
  /** Size of the sandbox's private /tmp. */
  tmpBytes: number
  /** Host file holding the sandbox's own boot id, shown at /proc/sys/kernel/random/boot_id. */
  bootIdFile?: string
  /** A seccomp filter is passed on SECCOMP_FD. */
  seccomp: boolean
  /** bubblewrap can forbid user namespaces inside the jail (0.8.0 and later). */
  disableUserns: boolean
  /**
   * The jail names itself "sandbox". False where the container runtime's seccomp profile refuses
   * sethostname (probe.ts): the jail keeps the container's name, in a UTS namespace of its own still.
   */
  hostname: boolean
  /**
   * The zygote's jail (analyst_zygote.py) instead of a sandbox's: the same read-only
   * mounts, but as root with its capabilities (it builds each forked sandbox's namespaces), its
   * socket folder at ZYGOTE_SOCKET_DIR, and empty mount points where each sandbox mounts its own
   * workspace and data.
   */
  zygoteSocketDir?: string
}

/** A sandbox boots on its own: E2B's resume is a new boot, and code tells one by this id. */
export const BOOT_ID = '/proc/sys/kernel/random/boot_id'

/** In the zygote's own /tmp: each forked sandbox mounts a /tmp of its own over it. */
export const ZYGOTE_SOCKET_DIR = '/tmp/.zygote'

/**
 * The system files a jail sees, read-only: /usr, the top-level links such as /lib -> usr/lib
 * (merged /usr) as they are, and the allowed /etc; from the host, or from a template's root file
 * system (`rootfs`), with its /opt entries (a venv at /opt/venv) too.
 */
export function systemArgs(rootfs: string | undefined, network: boolean): string[] {
  const root = rootfs ?? ''
  const args = ['--ro-bind', `${root}/usr`, '/usr']
  for (const name of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
    const path = `${root}/${name}`
    if (!existsSync(path)) continue
    const stat = lstatSync(path)
    if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(path), `/${name}`)
    else if (stat.isDirectory()) args.push('--ro-bind', path, `/${name}`)
  }
  for (const path of [...ETC_ALLOWED, ...(network ? ETC_NETWORK : [])]) {
    if (existsSync(`${root}${path}`)) args.push('--ro-bind', `${root}${path}`, path)
  }
  if (rootfs) {
    for (const entry of safeList(`${rootfs}/opt`)) {
      if (`/opt/${entry}` !== SANDBOX_KERNEL_DIR)
        args.push('--ro-bind', `${rootfs}/opt/${entry}`, `/opt/${entry}`)
    }
  }
  return args
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}

export function bwrapArgs(spec: JailSpec, command: string[]): string[] {
  const zygote = spec.zygoteSocketDir !== undefined
  const args = [
    ...(zygote ? [] : ['--unshare-user']),
    '--unshare-ipc',
    '--unshare-pid',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(spec.network ? [] : ['--unshare-net']),
    ...(zygote ? [] : ['--uid', '1000', '--gid', '1000']),
    ...(spec.hostname ? ['--hostname', 'sandbox'] : []),
    '--die-with-parent',
    '--new-session',
    // The host learns the PID of the jail's init from this fd, to end the jail from the inside out.
    ...(zygote ? ['--cap-add', 'ALL'] : ['--info-fd', String(INFO_FD), '--cap-drop', 'ALL']),
    ...(spec.seccomp ? ['--seccomp', String(SECCOMP_FD)] : []),
    // No nested user namespaces: they would hand code capabilities (in a namespace of its own).
    ...(spec.disableUserns ? ['--disable-userns'] : []),
    // As root (the zygote), bubblewrap makes the folders it needs for mounts 0700: sandbox uids could not enter.
    ...(zygote ? ['--perms', '0755', '--dir', '/etc', '--perms', '0755', '--dir', '/opt'] : []),
    ...systemArgs(spec.rootfs, spec.network),
    '--proc',
    '/proc',
    ...(spec.bootIdFile ? ['--ro-bind', spec.bootIdFile, BOOT_ID] : []),
    '--dev',
    '/dev',
    '--size',
    String(spec.tmpBytes),
    '--tmpfs',
    '/tmp',
    '--dir',
    MPL_CONFIG_DIR,
  ]
  for (const name of ['passwd', 'group', 'hosts'])
    args.push('--ro-bind', `${spec.etc}/${name}`, `/etc/${name}`)
  // The host's interpreter outside /usr (a venv, pyenv) is bound where it is, read-only.
  for (const path of spec.rootfs ? [] : spec.python.paths) {
    if (!path.startsWith('/usr/') && path !== '/usr' && existsSync(path)) args.push('--ro-bind', path, path)
  }
  for (const bind of spec.binds ?? []) args.push('--ro-bind', bind.from, bind.to)
  if (spec.fontCache) {
    const name = spec.fontCache.slice(spec.fontCache.lastIndexOf('/') + 1)
    args.push('--ro-bind', spec.fontCache, `${MPL_CONFIG_DIR}/${name}`)
  }
  if (spec.zygoteSocketDir !== undefined) {
    args.push(
      '--dir',
      SANDBOX_HOME,
      '--dir',
      ZYGOTE_SOCKET_DIR,
      '--bind',
      spec.zygoteSocketDir,
      ZYGOTE_SOCKET_DIR,
    )
  } else args.push('--bind', spec.workspace, SANDBOX_HOME, '--ro-bind', spec.data, SANDBOX_DATA)
  args.push(
    '--ro-bind',
    spec.kernelDir,
    SANDBOX_KERNEL_DIR,
    // The jail's own root (a tmpfs made by bubblewrap) read-only: only the workspace and /tmp take writes.
    '--remount-ro',
    '/',
    '--chdir',
    SANDBOX_HOME,
    '--',
    ...command,
  )
  return args
}
