/**
 * What a sandbox is rooted in: the host's Python, or a built template (src/templates/types.ts):
 * its root file system or its venv, its Python, env, working directory and start step. Warm pools
 * and zygotes are kept per root (its key).
 *
 * A template's files are not trusted as the host's are: a build may have run code that a client
 * sent. So nothing of a template runs on the host or with host privileges: its Python is probed,
 * and matplotlib's font list built, inside a jail rooted in it as an unprivileged uid; and its
 * sandboxes fork from a zygote of its own that runs as root of a user namespace only (zygote.ts),
 * never from the host's, which holds real capabilities to build jails. A template in a folder closed
 * to other users (root's /root/.analyst) is reached through a bind of its own (template-reach.ts).
 * @module
 */
import { execFile } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { VENV } from '../../templates/steps.js'
import type { BuiltTemplate } from '../../templates/types.js'
import { SandboxUnavailableError } from '../errors.js'
import { MPL_CONFIG_DIR } from '../kernel/env.js'
import { systemArgs } from './jail.js'
import { findPython, type PythonInfo, probePython } from './python.js'
import { getRuntime, isRoot } from './runtime.js'
import {
  closedParent,
  type JailHelper,
  type JailStart,
  jailHelper,
  jailStart,
  type Reach,
  reachFor,
} from './template-reach.js'

export interface SandboxRoot {
  /** Pools and zygotes are per key: `host:<executable>`, or the template's id. */
  key: string
  template?: BuiltTemplate
  /** The template's root file system on the host; undefined: the host's /usr and /etc. */
  rootfs?: string
  /** Host folders bound read-only: a template's venv over the host's Python, where its build made it. */
  binds: Array<{ from: string; to: string }>
  /** The kernel's interpreter, as a path in the jail; the host's paths (and a venv) are bound for a host root. */
  python: PythonInfo
  /** Set in every sandbox, under the caller's envs. */
  env: Record<string, string>
  /** The kernel's working directory; undefined: the workspace. */
  workdir?: string
  /** Code run in each kernel before it is ready. */
  start?: string
  /** matplotlib's font list for this root, bound into each jail (undefined: each kernel builds it). */
  fontCache?: string
  /** A template in a folder closed to other users: where its jails find its folder (template-reach.ts). */
  reach?: Reach
}

/** The host's Python as a root: today's sandboxes. */
export function hostRoot(python: PythonInfo, fontCache?: string): SandboxRoot {
  return { key: `host:${python.executable}`, python, env: {}, binds: [], fontCache }
}

const roots = new Map<string, Promise<SandboxRoot>>()

/** A built template as a root, probed once per process (its Python's version, paths and modules). */
export function templateRoot(template: BuiltTemplate): Promise<SandboxRoot> {
  const known = roots.get(template.id)
  if (known) return known
  const made = makeRoot(template)
  roots.set(template.id, made)
  made.catch(() => roots.delete(template.id))
  return made
}

async function makeRoot(template: BuiltTemplate): Promise<SandboxRoot> {
  const rootfs = template.rootfs
  const venv = join(template.dir, 'venv')
  if (rootfs && !existsSync(join(rootfs, 'usr'))) {
    throw new SandboxUnavailableError(
      `The template ${nameOf(template)} has no root file system at ${rootfs}`,
      {
        hint: 'Build it again: analyst template build SPEC --force',
      },
    )
  }
  // pip layers over the host's Python: the venv the build made at /opt/venv (src/templates/steps.ts).
  const binds = !rootfs && existsSync(venv) ? [{ from: venv, to: VENV }] : []
  // bubblewrap runs as the sandbox's own uid: a template it cannot pass through to is bound where it can.
  const closed = isRoot ? closedParent(template.dir) : undefined
  const reach = closed ? reachFor(template.dir, template.id) : undefined
  const jail: ProbeJail = {
    rootfs,
    binds,
    reach,
    helper: isRoot ? jailHelper(await findPython()) : undefined,
  }
  // Who runs the probe's jail does not depend on its command.
  const { uid, gid } = inRoot(jail, [])
  const python = await probePython(template.python.path, {
    wrap: (argv) => inRoot(jail, argv).command,
    uid,
    gid,
  }).catch((cause) => {
    throw new SandboxUnavailableError(
      `The template ${nameOf(template)}'s Python (${template.python.path}) does not run`,
      {
        cause,
        hint: closed
          ? `Its folder is under ${closed}, closed to other users: sandboxes reach it through a bind that root makes, which needs CAP_SYS_ADMIN. Else let other users through (chmod o+x ${closed}), or keep templates in an Analyst home they can reach (ANALYST_HOME=/var/lib/analyst).`
          : 'Build it again (analyst template build SPEC --force), or use another template.',
      },
    )
  })
  const fontCache = python.modules.matplotlib ? await templateFontCache(template.id, jail, python) : undefined
  return {
    key: template.id,
    template,
    rootfs,
    binds,
    python,
    env: template.env,
    workdir: template.workdir,
    start: template.start,
    fontCache,
    ...(reach ? { reach } : {}),
  }
}

function nameOf(template: BuiltTemplate): string {
  return template.names[0] ?? template.id.slice(0, 12)
}

/** The uid a template's own programs run as outside a sandbox (as root: nobody; else this user). */
const PROBE_USER = { uid: 65534, gid: 65534 }

/** A throwaway jail in a template: its files, and (as root) how it is started as nobody. */
interface ProbeJail {
  rootfs: string | undefined
  binds: SandboxRoot['binds']
  reach: Reach | undefined
  helper: JailHelper | undefined
}

/**
 * argv inside a throwaway jail rooted in the template: no network, no capabilities, a user
 * namespace of its own, run (as root) as nobody.
 */
function inRoot(jail: ProbeJail, argv: string[], extra: string[] = []): JailStart {
  const command = bwrapInRoot(jail, argv, extra)
  return jail.helper ? jailStart(jail.reach, PROBE_USER, command, jail.helper) : { command }
}

function bwrapInRoot(jail: ProbeJail, argv: string[], extra: string[]): string[] {
  const runtime = getRuntime()
  return [
    'bwrap',
    '--unshare-all',
    '--unshare-user',
    '--uid',
    '1000',
    '--gid',
    '1000',
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    '--new-session',
    ...systemArgs(jail.rootfs, false),
    ...jail.binds.flatMap((bind) => ['--ro-bind', bind.from, bind.to]),
    '--ro-bind',
    `${runtime.etc}/passwd`,
    '/etc/passwd',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    ...extra,
    '--',
    ...argv,
  ]
}

function runInRoot(start: JailStart, env: Record<string, string>): Promise<void> {
  const [file, ...args] = start.command
  return new Promise((resolve) => {
    execFile(file as string, args, { env, timeout: 60_000, uid: start.uid, gid: start.gid }, () => resolve())
  })
}

/** matplotlib's font list for a template, built once in a jail rooted in it (paths as the jail sees them). */
async function templateFontCache(
  id: string,
  jail: ProbeJail,
  python: PythonInfo,
): Promise<string | undefined> {
  const dir = join(getRuntime().cache, `matplotlib-${id.slice(0, 16)}-${python.version}`)
  const find = () => readdirSync(dir).find((name) => /^fontlist-v\d+\.json$/.test(name))
  if (existsSync(dir) && find()) return join(dir, find() as string)
  mkdirSync(dir, { recursive: true, mode: 0o755 })
  if (isRoot) chownSync(dir, PROBE_USER.uid, PROBE_USER.gid)
  const inside = `${MPL_CONFIG_DIR}-build`
  await runInRoot(
    inRoot(jail, [python.executable, '-s', '-c', 'import matplotlib.font_manager'], ['--bind', dir, inside]),
    { PATH: '/usr/bin:/bin', HOME: inside, MPLCONFIGDIR: inside, MPLBACKEND: 'Agg' },
  )
  const file = find()
  return file ? join(dir, file) : undefined
}
