/**
 * E2B's file metadata: `user.e2b.<key>` extended attributes on the workspace's files. Node has no
 * xattr calls, so the host's Python makes them; it walks to the folder as the workspace does (one
 * component at a time, O_NOFOLLOW, dir_fd), so a link planted by code cannot lead it outside.
 * @module
 */
import { execFile } from 'node:child_process'
import { InvalidArgumentError } from '../errors.js'

export type Metadata = Record<string, string>

export interface MetadataRequest {
  /** Host folder the walk starts from (the workspace's, or data/'s). */
  base: string
  /** Folder names under base, none of them a link. */
  dirs: string[]
  /** Entries of that folder whose metadata to read. */
  names: string[]
  /** Entries whose `user.e2b.*` attributes are replaced first (an empty object clears them). */
  set?: Record<string, Metadata>
}

const PREFIX = 'user.e2b.'

const SCRIPT = `
import errno, json, os, sys
req = json.load(sys.stdin)
P = ${JSON.stringify(PREFIX)}
D = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
fd = os.open(req['base'], D)
for part in req['dirs']:
    nxt = os.open(part, D, dir_fd=fd)
    os.close(fd)
    fd = nxt
for name, meta in (req.get('set') or {}).items():
    f = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    try:
        for key in os.listxattr(f):
            if key.startswith(P): os.removexattr(f, key)
        for key, value in meta.items(): os.setxattr(f, P + key, value.encode())
    except OSError as e:
        if e.errno not in (errno.ENOTSUP, errno.EPERM) or meta: raise
    finally:
        os.close(f)
out = {}
for name in req['names']:
    path = f'/proc/self/fd/{fd}/{name}'
    try:
        keys = [k for k in os.listxattr(path, follow_symlinks=False) if k.startswith(P)]
        meta = {k[len(P):]: os.getxattr(path, k, follow_symlinks=False).decode('utf-8', 'replace') for k in keys}
    except OSError:
        continue
    if meta: out[name] = meta
print(json.dumps(out))
`

/** Reads (and first sets, when asked) the metadata of entries in one folder: name → metadata, for those that have any. */
export function metadataOf(python: string, request: MetadataRequest): Promise<Record<string, Metadata>> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      python,
      ['-I', '-S', '-c', SCRIPT],
      { env: {}, timeout: 10_000, maxBuffer: 64 << 20 },
      (error, stdout, stderr) => {
        if (!error) return resolve(JSON.parse(stdout) as Record<string, Metadata>)
        const why = stderr.trim().split('\n').at(-1) ?? error.message
        reject(
          new InvalidArgumentError(
            `The file's metadata could not be ${request.set ? 'set' : 'read'}: ${why}`,
            {
              hint: 'Check that the file exists, is not a link, and that the key and value are plain text.',
            },
          ),
        )
      },
    )
    child.stdin?.end(JSON.stringify(request))
  })
}
