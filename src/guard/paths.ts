/**
 * Where a path literal points, seen from the sandbox: inside the workspace, outside it, or to the
 * network (a URL).
 * @module
 */
import { posix } from 'node:path'

export type PathVerdict =
  | { kind: 'ok' }
  /** `escape` when a relative path climbs out with '..'; `absolute` for an absolute path elsewhere. */
  | { kind: 'outside'; how: 'absolute' | 'escape' | 'home'; path: string }
  | { kind: 'network'; url: string }

export interface PathPolicy {
  /** The working directory inside the sandbox, also $HOME. */
  workspace: string
  /** Other absolute paths (and everything under them) that code may use. */
  allowPaths: readonly string[]
}

/** URL schemes that reach other machines (pandas and fsspec open all of these). */
const NETWORK_SCHEMES = new Set([
  'http',
  'https',
  'ftp',
  'ftps',
  'sftp',
  'ssh',
  'scp',
  's3',
  's3a',
  's3n',
  'gs',
  'gcs',
  'az',
  'abfs',
  'abfss',
  'adl',
  'hdfs',
  'webhdfs',
  'ws',
  'wss',
  'smb',
  'git',
  'github',
  'hf',
])

function inside(path: string, root: string): boolean {
  const base = root.endsWith('/') ? root.slice(0, -1) : root
  return path === base || path.startsWith(`${base}/`)
}

/**
 * Classifies a path-like string: `value` is the known text, `complete` false when the rest comes
 * from an interpolation (then only what the known prefix already implies counts).
 */
export function classifyPath(value: string, complete: boolean, policy: PathPolicy): PathVerdict {
  const url = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(value)
  if (url?.[1]) {
    const scheme = url[1].toLowerCase()
    if (NETWORK_SCHEMES.has(scheme)) return { kind: 'network', url: value }
    if (scheme !== 'file') return { kind: 'ok' }
    // file:///etc/passwd and file://localhost/etc/passwd are local paths.
    value = value.slice(url[0].length).replace(/^[^/]*/, '')
    if (value === '') return { kind: 'ok' }
  }
  if (value.startsWith('~')) {
    const slash = value.indexOf('/')
    const user = slash === -1 ? value.slice(1) : value.slice(1, slash)
    if (user !== '' && (complete || slash !== -1)) return { kind: 'outside', how: 'home', path: value }
    if (user !== '') return { kind: 'ok' } // '~' followed by an unknown rest: cannot tell
    value = policy.workspace + (slash === -1 ? '' : value.slice(slash))
  }
  const allowed = [policy.workspace, ...policy.allowPaths]
  if (value.startsWith('/')) {
    const normal = posix.normalize(value)
    if (allowed.some((root) => inside(normal, root))) return { kind: 'ok' }
    // f'/{x}' or f'/home/{user}' could still name an allowed place.
    if (!complete && allowed.some((root) => root.startsWith(normal))) return { kind: 'ok' }
    return { kind: 'outside', how: 'absolute', path: value }
  }
  // Relative to the workspace: count the levels; climbing above it is an escape even if a later
  // part climbs back in.
  const segments = value.split(/\/+/)
  if (!complete) segments.pop() // the last known segment may continue in the interpolation
  let depth = 0
  for (const segment of segments) {
    if (segment === '..') depth -= 1
    else if (segment !== '.' && segment !== '') depth += 1
    if (depth < 0) return { kind: 'outside', how: 'escape', path: value }
  }
  return { kind: 'ok' }
}
