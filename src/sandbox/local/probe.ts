/**
 * Small bubblewrap probes: what this machine (or this container's runtime) lets a jail do. Each
 * runs `true` in the least jail that shows the thing asked about, and is read once per process.
 * @module
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { isRoot } from './runtime.js'

export interface ProbeResult {
  ok: boolean
  /** What bubblewrap printed when it failed. */
  output: string
}

/** `bwrap <extra> … true` with /usr and its top-level links, as an unprivileged user. */
export function probeJail(extra: string[]): ProbeResult {
  const probe = spawnSync(
    'bwrap',
    [
      ...extra,
      '--die-with-parent',
      '--ro-bind',
      '/usr',
      '/usr',
      '--symlink',
      'usr/bin',
      '/bin',
      '--symlink',
      'usr/lib',
      '/lib',
      '--symlink',
      'usr/lib64',
      '/lib64',
      '/usr/bin/true',
    ],
    // As root, sandboxes run under uids of their own: probe as one.
    { encoding: 'utf8', uid: isRoot ? 65534 : undefined, gid: isRoot ? 65534 : undefined },
  )
  return { ok: probe.status === 0, output: `${probe.stderr ?? ''}${probe.error?.message ?? ''}`.trim() }
}

let hostname: boolean | undefined

/**
 * Whether a jail may name itself ("sandbox"). Podman's and Docker's default seccomp profiles refuse
 * sethostname to a container without CAP_SYS_ADMIN (--cap-drop ALL), even in a UTS namespace of its
 * own: the jail then keeps the container's name, and everything else of the jail still holds.
 */
export function canSetHostname(): boolean {
  hostname ??= probeJail(['--unshare-all', '--hostname', 'sandbox']).ok || !probeJail(['--unshare-all']).ok
  return hostname
}

export type Where = 'host' | 'container' | 'kubernetes'

/** Podman and Docker leave these files in their containers; Kubernetes sets this variable. */
export function whereAmI(): Where {
  if (process.env.KUBERNETES_SERVICE_HOST) return 'kubernetes'
  if (existsSync('/run/.containerenv') || existsSync('/.dockerenv') || process.env.container)
    return 'container'
  return 'host'
}

/**
 * What to do about bubblewrap's own error, from its words: each refusal has its own cause, and a
 * container lacks a flag where a host lacks a setting. Undefined when the output names none.
 */
export function jailFailureFix(output: string, where: Where = whereAmI()): string | undefined {
  if (/Can't mount proc/i.test(output)) {
    const flag =
      where === 'kubernetes'
        ? 'give the container securityContext.procMount: Unmasked (in a pod with hostUsers: false)'
        : 'run the container with --security-opt unmask=/proc/*'
    return `bubblewrap cannot mount /proc: ${flag}`
  }
  if (/Can't set hostname/i.test(output)) {
    return "bubblewrap cannot set the jail's hostname (a seccomp profile refuses sethostname); Analyst leaves it out where its probe sees this, so report it as a bug"
  }
  if (/setting up uid map|No permissions to creat|unprivileged|Creating new namespace failed/i.test(output)) {
    return usernsFix(where)
  }
  return undefined
}

/** Where user namespaces are refused: the host's settings, or in a container what refuses them. */
export function usernsFix(where: Where = whereAmI()): string {
  if (where !== 'host') {
    return "bubblewrap cannot create user namespaces in this container: the runtime's seccomp profile or the host refuses them; podman's default profile allows them, with Docker try --security-opt seccomp=unconfined, and check the host's kernel.unprivileged_userns_clone"
  }
  return (
    'bubblewrap cannot create user namespaces here. Enable them (sudo sysctl -w kernel.unprivileged_userns_clone=1; ' +
    'on Ubuntu 24.04 also sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0).'
  )
}
