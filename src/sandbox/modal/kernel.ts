import { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ContainerProcess, Sandbox as ModalSdkSandbox } from 'modal'
import { SandboxUnavailableError } from '../errors.js'
import { KernelChannel } from '../kernel/channel.js'
import { readLines } from '../kernel/protocol.js'
import { kernelSources } from '../kernel/sources.js'

/** The kernel's Python files, as the bootstrap reads them: one JSON object, made once. */
let payload: Buffer | undefined

/**
 * Reads `LENGTH\n` then LENGTH bytes of JSON ({files, config}) from stdin, unbuffered, so that
 * what follows stays in the pipe for the kernel; writes the files; starts the kernel on fds 3/4.
 */
const BOOTSTRAP = `
import json, os, sys, tempfile
def read(n):
    out = b''
    while len(out) < n:
        chunk = os.read(0, n - len(out))
        if not chunk:
            sys.exit('analyst: the host closed stdin before the kernel was sent')
        out += chunk
    return out
header = b''
while not header.endswith(b'\\n'):
    header += read(1)
spec = json.loads(read(int(header)))
folder = tempfile.mkdtemp(prefix='analyst-kernel-')
for name, source in spec['files'].items():
    with open(os.path.join(folder, name), 'w') as f:
        f.write(source)
home = spec['home']
os.makedirs(os.path.join(home, 'data'), exist_ok=True)
os.chdir(home)
try:
    os.setsid()
except OSError:
    pass
os.dup2(0, 3)
os.dup2(1, 4)
os.dup2(2, 1)
os.execv(sys.executable, [sys.executable, '-s', os.path.join(folder, 'analyst_kernel.py'), json.dumps(spec['config'])])
`

export interface ModalKernelSpec {
  /** The image's Python. @default 'python3' */
  python: string
  /** The kernel's whole environment (on top of the image's). */
  env: Record<string, string>
  /** analyst_kernel.py's configuration: limits, caps, modules to preload. */
  config: Record<string, unknown>
  home: string
  readyTimeoutMs: number
  maxMessageBytes: number
}

/** The kernel stopped: it exited (`code`), or its output stream was lost (`lost`). */
export class KernelStopped extends Error {
  constructor(
    readonly code: number | null,
    readonly lost: boolean,
    readonly output: string,
  ) {
    super(lost ? 'the connection to the kernel was lost' : `kernel exited (code ${code})`)
  }
}

export class ModalKernel extends KernelChannel<KernelStopped> {
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>
  private readonly encoder = new TextEncoder()
  private diagnostics = ''
  protected readonly exited: Promise<KernelStopped>

  private constructor(
    private readonly sandbox: ModalSdkSandbox,
    process: ContainerProcess<Uint8Array>,
    maxMessageBytes: number,
  ) {
    super()
    this.writer = process.stdin.getWriter()
    const stdout = Readable.fromWeb(process.stdout as unknown as import('node:stream/web').ReadableStream)
    const stderr = Readable.fromWeb(process.stderr as unknown as import('node:stream/web').ReadableStream)
    stderr.on('data', (chunk: Buffer) => {
      this.diagnostics = (this.diagnostics + chunk.toString('utf8')).slice(-8192)
    })
    stderr.on('error', () => {})
    readLines(
      stdout,
      maxMessageBytes,
      (line) => this.receive(line),
      () => this.dropped++,
    )
    this.exited = new Promise((resolve) => {
      const ended = async (error?: Error) => {
        // The stream ends when the process has exited, or when the connection carrying it is gone
        // while the process runs on: the exit code tells which (asked briefly: a lost router may not answer).
        const code = await Promise.race([process.wait().catch(() => null), sleep(3000, null, { ref: false })])
        await sleep(50, undefined, { ref: false }) // the last of stderr
        this.stop(new KernelStopped(code, code === null || error !== undefined, this.diagnostics))
        resolve(this.exitError as KernelStopped)
      }
      stdout.on('end', () => ended())
      stdout.on('error', (error) => ended(error))
    })
  }

  /** Starts the kernel in the sandbox and waits for its `ready` message. */
  static async start(sandbox: ModalSdkSandbox, spec: ModalKernelSpec): Promise<ModalKernel> {
    const process = await sandbox.exec([spec.python, '-u', '-c', BOOTSTRAP], {
      mode: 'binary',
      env: spec.env,
    })
    const kernel = new ModalKernel(sandbox, process, spec.maxMessageBytes)
    const ready = new Promise<void>((resolve) => kernel.waiters.set('ready', () => resolve()))
    payload ??= Buffer.from(JSON.stringify(kernelSources()))
    const body = Buffer.concat([
      Buffer.from(`{"home":${JSON.stringify(spec.home)},"config":${JSON.stringify(spec.config)},"files":`),
      payload,
      Buffer.from('}'),
    ])
    kernel.writeBytes(Buffer.concat([Buffer.from(`${body.length}\n`), body]))
    let timer: NodeJS.Timeout | undefined
    const outcome = await Promise.race([
      ready.then(() => 'ready' as const),
      kernel.exited,
      new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), spec.readyTimeoutMs)
      }),
    ])
    clearTimeout(timer)
    if (outcome === 'ready') return kernel
    await kernel.kill()
    const output = outcome === 'timeout' ? kernel.diagnostics : outcome.output
    throw new SandboxUnavailableError(
      outcome === 'timeout'
        ? `The Python kernel did not start in the Modal sandbox within ${spec.readyTimeoutMs / 1000} s`
        : `The Python kernel could not start in the Modal sandbox: ${output.trim().split('\n').slice(-3).join(' ') || outcome.message}`,
      {
        hint: /No module named|ModuleNotFoundError/.test(output)
          ? 'The image lacks a module the kernel needs (pandas, matplotlib).'
          : /not found|No such file/.test(output)
            ? `The image has no ${spec.python}.`
            : undefined,
        fix: /No module named|ModuleNotFoundError|not found|No such file/.test(output)
          ? { setting: 'image' }
          : undefined,
      },
    )
  }

  private stop(stopped: KernelStopped) {
    if (this.exitError) return
    this.ended(stopped)
    // Lost, not exited: EOF ends a kernel that may run on unheard (its IO thread exits at EOF).
    if (stopped.lost) this.writer.close().catch(() => {})
  }

  /** Writes in order (the SDK sends each write as one call, at its offset); a failed write loses the kernel. */
  protected write(line: string) {
    this.writeBytes(this.encoder.encode(line))
  }

  private writeBytes(data: Uint8Array) {
    this.writer.write(data).catch((cause: unknown) => {
      this.stop(new KernelStopped(null, true, `${this.diagnostics}\n${String(cause)}`))
    })
  }

  /**
   * Ends the kernel: EOF on its stdin (its IO thread exits the process), then, if it has not
   * stopped after a grace, a `kill` of its process group from a second exec.
   */
  async kill(graceMs = 2000): Promise<KernelStopped> {
    if (!this.alive) return this.exited
    this.writer.close().catch(() => {})
    const stopped = await Promise.race([this.exited, sleep(graceMs, undefined, { ref: false })])
    if (stopped) return stopped
    if (this.readyPid) {
      await this.sandbox
        .exec(['kill', '-KILL', '--', `-${this.readyPid}`])
        .then((kill) => kill.wait())
        .catch(() => {})
    }
    const after = await Promise.race([this.exited, sleep(graceMs, undefined, { ref: false })])
    if (after) return after
    // Nothing ends it from here: it is forgotten, and ends with the sandbox (its timeout at the latest).
    this.stop(new KernelStopped(null, true, this.diagnostics))
    return this.exitError as KernelStopped
  }
}
