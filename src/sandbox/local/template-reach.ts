/**
 * How root starts a jail's bubblewrap as another user, and how that jail reaches a template kept
 * in a folder closed to other users.
 *
 * bubblewrap runs as the sandbox's uid (or as root of a user namespace, for a template's zygote),
 * and binds the template's /usr, /etc and the rest by path: it cannot pass a folder closed to
 * other users, such as root's default home, /root/.analyst, with /root 0700. Such a template is
 * bound, read-only, at an empty folder of the runtime's, in a mount namespace of the jail's own,
 * by analyst_userns.py while it is still root; then it becomes the jail's user and runs
 * bubblewrap, whose paths in the template are moved there. /root stays closed, the template is
 * copied nowhere, and on the host the folder stays empty. (bubblewrap's --ro-bind-fd cannot do
 * it: it resolves the fd back to its path, and is refused at the closed folder.)
 * @module
 */
import { mkdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { LOCAL_PYTHON_DIR, type PythonInfo } from './python.js'
import { getRuntime } from './runtime.js'

/** A template's folder (`dir`, behind a closed folder) and where its jails find it (`at`). */
export interface Reach {
  dir: string
  at: string
}

/** Who runs a jail: a uid of the host, or root of a user namespace with these maps (zygote.ts). */
export type JailUser = { uid: number; gid: number } | { map: string }

/** A command and whom root spawns it as: the uid and gid given, else root (which drops them itself). */
export interface JailStart {
  command: string[]
  uid?: number
  gid?: number
}

/** analyst_userns.py and the Python that runs it: the host's, as root, never a template's. */
export interface JailHelper {
  python: string
  script: string
}

export function jailHelper(hostPython: PythonInfo): JailHelper {
  return { python: hostPython.executable, script: join(LOCAL_PYTHON_DIR, 'analyst_userns.py') }
}

/**
 * The first folder on the way to `dir` that other users cannot pass through, if any: where a
 * template must be reached (as root; any other user owns its home).
 */
export function closedParent(dir: string): string | undefined {
  let path = ''
  for (const part of dir.split('/').filter(Boolean)) {
    path += `/${part}`
    if ((statSync(path).mode & 0o001) === 0) return path
  }
  return undefined
}

/** The reach of a template's folder: an empty folder of this process's runtime, made now. */
export function reachFor(dir: string, id: string): Reach {
  const at = join(getRuntime().own, 'reach', id.slice(0, 16))
  mkdirSync(at, { recursive: true, mode: 0o755 })
  return { dir, at }
}

/**
 * How root starts a bubblewrap command (`bwrap …`) as `user`. A plain uid with nothing to reach
 * is spawned as that uid, the command as it is. Otherwise analyst_userns.py runs it, spawned as
 * root: it binds the template's folder (`reach`, the command's paths in it moved there), then
 * becomes the uid, or makes the user namespace.
 */
export function jailStart(
  reach: Reach | undefined,
  user: JailUser,
  command: string[],
  helper: JailHelper,
): JailStart {
  if (!reach && !('map' in user)) return { command, uid: user.uid, gid: user.gid }
  const moved = reach
    ? command.map((arg) =>
        arg === reach.dir || arg.startsWith(`${reach.dir}/`)
          ? `${reach.at}${arg.slice(reach.dir.length)}`
          : arg,
      )
    : command
  return {
    command: [
      helper.python,
      '-I',
      '-S',
      helper.script,
      ...(reach ? ['--reach', reach.dir, reach.at] : []),
      ...('map' in user ? [user.map] : ['--user', `${user.uid}:${user.gid}`]),
      ...moved,
    ],
  }
}
