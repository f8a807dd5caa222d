/**
 * E2B's file metadata: `user.e2b.<key>` extended attributes on the workspace's files. Node has no
 * xattr calls, so the host's Python makes them; it walks to the folder as the workspace does (one
 * component at a time, O_NOFOLLOW, dir_fd), so a link planted by code cannot lead it outside.
 *
 * One Python per executable answers every request, a JSON line each, for the life of the process:
 * a Python start per request made every detailed `files.list`, `getInfo` and `exists` of the E2B
 * API cost ~36 ms more than a plain read. It runs on the host with an empty environment, as before.
 * @module
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
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
/** A request not answered by then ends the helper (and every request waiting on it); the next starts a new one. */
const REQUEST_TIMEOUT_MS = 10_000

// Each request closes every descriptor it opened: the helper lives as long as the server.
const SCRIPT = `
import errno, json, os, sys
P = ${JSON.stringify(PREFIX)}
D = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
def answer(req):
    fd = os.open(req['base'], D)
    try:
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
        return out
    finally:
        os.close(fd)
for line in sys.stdin:
    try:
        reply = {'ok': answer(json.loads(line))}
    except Exception as e:
        reply = {'error': f'{type(e).__name__}: {e}'}
    sys.stdout.write(json.dumps(reply) + '\\n')
    sys.stdout.flush()
`

type Reply = { ok: Record<string, Metadata> } | { error: string }

/** The helper gave no answer in time: asking again would wait as long. */
class Unanswered extends Error {}

interface Pending {
  resolve(reply: Reply): void
  reject(error: Error): void
}

/** One long-running Python, answering requests in the order they were sent. */
class Helper {
  private readonly child: ChildProcessWithoutNullStreams
  private readonly pending: Pending[] = []
  private timer: NodeJS.Timeout | undefined
  private ended = false

  constructor(
    python: string,
    private readonly onEnd: () => void,
  ) {
    this.child = spawn(python, ['-I', '-S', '-c', SCRIPT], { env: {}, stdio: 'pipe' })
    // Idle, it keeps no server or test process alive; a request waiting on it has its timer for that.
    this.child.unref()
    for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr])
      (stream as unknown as { unref?(): void }).unref?.()
    this.child.stderr.resume()
    createInterface({ input: this.child.stdout }).on('line', (line) => this.answered(line))
    this.child.on('error', (error) => this.end(error))
    this.child.on('exit', (code, signal) =>
      this.end(new Error(`it ended (${signal ?? `exit code ${code}`})`)),
    )
    this.child.stdin.on('error', (error) => this.end(error))
  }

  ask(request: MetadataRequest): Promise<Reply> {
    if (this.ended) return Promise.reject(new Error('it ended'))
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject })
      this.child.stdin.write(`${JSON.stringify(request)}\n`)
      this.arm()
    })
  }

  private answered(line: string) {
    const waiting = this.pending.shift()
    if (!waiting) return
    try {
      waiting.resolve(JSON.parse(line) as Reply)
    } catch {
      waiting.reject(new Error('it answered something that is not JSON'))
    }
    this.arm()
  }

  /** A deadline for the oldest request waiting, none when nothing waits. */
  private arm() {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.pending.length === 0) return
    this.timer = setTimeout(
      () => this.end(new Unanswered(`no answer within ${REQUEST_TIMEOUT_MS / 1000} s`)),
      REQUEST_TIMEOUT_MS,
    )
  }

  private end(why: Error) {
    if (this.ended) return
    this.ended = true
    clearTimeout(this.timer)
    this.onEnd()
    this.child.kill('SIGKILL')
    for (const waiting of this.pending.splice(0)) waiting.reject(why)
  }
}

const helpers = new Map<string, Helper>()

function helperFor(python: string): Helper {
  let helper = helpers.get(python)
  if (!helper) {
    const made = new Helper(python, () => {
      if (helpers.get(python) === made) helpers.delete(python)
    })
    helper = made
    helpers.set(python, helper)
  }
  return helper
}

/** Reads (and first sets, when asked) the metadata of entries in one folder: name → metadata, for those that have any. */
export async function metadataOf(
  python: string,
  request: MetadataRequest,
): Promise<Record<string, Metadata>> {
  const failed = (why: string) =>
    new InvalidArgumentError(`The file's metadata could not be ${request.set ? 'set' : 'read'}: ${why}`, {
      hint: 'Check that the file exists, is not a link, and that the key and value are plain text.',
    })
  let reply: Reply | undefined
  // A helper that died (killed, or a request sent as it ended) is replaced once; the request is
  // safe to repeat, since setting replaces the attributes.
  for (let attempt = 0; reply === undefined; attempt++) {
    try {
      reply = await helperFor(python).ask(request)
    } catch (error) {
      if (attempt > 0 || error instanceof Unanswered)
        throw failed(`the helper that reads extended attributes failed: ${(error as Error).message}`)
    }
  }
  if ('error' in reply) throw failed(reply.error)
  return reply.ok
}
