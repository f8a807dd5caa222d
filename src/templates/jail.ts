/**
 * The build jail: a template's steps are untrusted code, so each runs under bubblewrap in the
 * template's own root (writable), in its own PID, IPC and UTS namespaces, with no network but for
 * the package-fetch steps, no_new_privs, only the capabilities a package manager needs (those a
 * container engine's build gives), an environment made of an allowlist, and none of the host's
 * files but what a step is handed read-only. Over the host's Python (base host) the jail is the
 * host's system read-only, the template's venv the one writable folder, and the step runs as an
 * unprivileged user. Pure functions: what the jail lets in can be read here.
 * @module
 */
import { existsSync } from 'node:fs'
import { systemArgs } from '../sandbox/local/jail.js'
import { VENV } from './steps.js'

/** What dpkg, apt and pip need as root in a root of their own (a container build's default set, less raw sockets and mknod). */
export const BUILD_CAPABILITIES = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FOWNER',
  'CAP_FSETID',
  'CAP_KILL',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETPCAP',
  'CAP_SETFCAP',
  'CAP_SYS_CHROOT',
]

/** The PATH of every step: the template's venv first, so that a plain `pip install` lands in it. */
export const BUILD_PATH = `${VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`

export interface BuildJailSpec {
  /** The template's root, writable: the step runs in it, as root. */
  root?: string
  /** Base host: the host's system read-only, this folder writable at /opt/venv, as uid 1000. */
  hostVenv?: string
  /** Only for the package-fetch steps. */
  network: boolean
  /** Host files and folders handed to the step read-only (copy sources, wheel folders). */
  binds: Array<{ src: string; dest: string }>
  /** The step's whole environment. */
  env: Record<string, string>
  cwd: string
}

export function buildJailArgs(spec: BuildJailSpec, command: string[]): string[] {
  const args = [
    '--unshare-ipc',
    '--unshare-pid',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(spec.network ? [] : ['--unshare-net']),
    '--hostname',
    'build',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
  ]
  if (spec.root) {
    args.push('--cap-drop', 'ALL', ...BUILD_CAPABILITIES.flatMap((cap) => ['--cap-add', cap]))
    args.push(
      '--bind',
      spec.root,
      '/',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--perms',
      '1777',
      '--tmpfs',
      '/tmp',
    )
    // The host's resolver for the steps that fetch; the template keeps its own /etc otherwise.
    if (spec.network && existsSync('/etc/resolv.conf'))
      args.push('--ro-bind', '/etc/resolv.conf', '/etc/resolv.conf')
  } else if (spec.hostVenv) {
    args.push('--unshare-user', '--uid', '1000', '--gid', '1000', '--cap-drop', 'ALL')
    // The host's system files as a sandbox sees them (and, for the fetch steps, what reaches an index).
    args.push(...systemArgs(undefined, spec.network), '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp')
    if (spec.network && existsSync('/etc/hosts')) args.push('--ro-bind', '/etc/hosts', '/etc/hosts')
    args.push('--bind', spec.hostVenv, VENV)
  } else throw new Error('a build jail needs a root or a host venv')
  for (const bind of spec.binds) args.push('--ro-bind', bind.src, bind.dest)
  for (const [name, value] of Object.entries(spec.env)) args.push('--setenv', name, value)
  args.push('--chdir', spec.cwd, '--', ...command)
  return args
}

/** The variables a step may see: the template's own, pip's index settings, and nothing of the host's but a proxy for the fetch steps. */
export function buildEnv(options: {
  templateEnv: Record<string, string>
  pipEnv: Record<string, string>
  network: boolean
  host?: NodeJS.ProcessEnv
  home: string
}): Record<string, string> {
  const env: Record<string, string> = {
    PATH: BUILD_PATH,
    HOME: options.home,
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    DEBIAN_FRONTEND: 'noninteractive',
    PIP_DISABLE_PIP_VERSION_CHECK: '1',
    PIP_NO_INPUT: '1',
    PIP_ROOT_USER_ACTION: 'ignore',
    PIP_PROGRESS_BAR: 'off',
    ...options.pipEnv,
  }
  if (options.network) {
    for (const name of ['http_proxy', 'https_proxy', 'no_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY']) {
      const value = options.host?.[name]
      if (value) env[name] = value
    }
  }
  for (const [name, value] of Object.entries(options.templateEnv)) {
    // PATH stays the build's (the venv first), with the template's additions before it.
    env[name] = name === 'PATH' ? mergePath(value, BUILD_PATH) : value
  }
  for (const name of Object.keys(env)) if (name.startsWith('ANALYST_')) delete env[name]
  return env
}

/** `first`'s folders, then those of `then` that it lacks. */
export function mergePath(first: string, then: string): string {
  const dirs = first.split(':').filter(Boolean)
  for (const dir of then.split(':')) if (dir && !dirs.includes(dir)) dirs.push(dir)
  return dirs.join(':')
}
