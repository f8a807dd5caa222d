/**
 * The Jupyter engine's provisioner: how one kernel starts on the server (recorded, so that a
 * crashed run's kernels are found; its channel open), is reached again when only its socket
 * dropped, is restarted in place through the server's restart API, and is deleted. When any of
 * it happens is the restart supervisor's (../kernel/supervisor.ts).
 * @module
 */
import { KernelChannel } from './channel.js'
import type { KernelRecords } from './leftovers.js'
import {
  deleteKernel,
  getKernel,
  type JupyterSettings,
  restartKernel,
  type ServerInfo,
  startKernel,
} from './server.js'

/** How long a dead kernel is asked to go before it is left to the next start's clean-up. */
const RETIRE_TIMEOUT_MS = 30_000

/** One kernel on the server, from its start to its end: restarted or replaced, it is a new one. */
export class JupyterKernel {
  private why: string | undefined
  private ended: Promise<void> | undefined
  channel!: KernelChannel
  /** Told once when the kernel stops (the sandbox ends the commands it ran). */
  onStop: (why: string) => void = () => {}
  /** Told of comm messages from the kernel, whatever request they follow (commands' output). */
  onComm: (commId: string, data: unknown) => void = () => {}

  constructor(
    readonly id: string,
    /** Its working directory, relative to the workspace. */
    readonly cwd: string,
    channel: KernelChannel,
  ) {
    this.attach(channel)
  }

  /** Makes `channel` the kernel's: a restart or death by the server's restarter stops the kernel. */
  attach(channel: KernelChannel) {
    this.channel = channel
    channel.onKernelState = (state) => {
      // A new kernel replaces it: waiting for the server's own restart raced it (a socket opened
      // while the server restarts a kernel that died young, on new ports, may reach nothing).
      if (state === 'restarting' || state === 'dead') this.stop(whyStopped(state))
    }
    channel.onComm = (commId, data) => this.onComm(commId, data)
  }

  get alive(): boolean {
    return this.why === undefined && !this.channel.closed
  }

  /** Why it stopped, once it has: never connected to again. */
  get stopped(): string | undefined {
    return this.why
  }

  /** It stopped, or is given up: its channel closes, and `onStop` is told. */
  stop(why: string) {
    if (this.why !== undefined) return
    this.why = why
    this.channel.close()
    this.onStop(why)
  }

  /** Runs `end` once, however often the kernel is ended. */
  endOnce(end: () => Promise<void>): Promise<void> {
    this.ended ??= end()
    return this.ended
  }
}

export class JupyterKernels {
  /** Kernels that stopped and are being deleted while the server may still be restarting them. */
  private readonly retiring = new Set<Promise<void>>()

  constructor(
    private readonly server: ServerInfo,
    private readonly settings: JupyterSettings,
    private readonly records: KernelRecords,
  ) {}

  private get http() {
    return this.server.http
  }

  /** A new kernel on the server, its channel open (the prelude is the sandbox's). */
  async start(cwd: string, signal?: AbortSignal): Promise<JupyterKernel> {
    const model = await startKernel(this.server, this.settings, signal)
    this.records.add(this.http.baseUrl, model.id)
    try {
      return new JupyterKernel(model.id, cwd, await KernelChannel.open(this.http, model.id))
    } catch (error) {
      await this.delete(model.id)
      throw error
    }
  }

  /**
   * Whether a kernel whose channel closed still runs: the server still has it, and a new channel
   * reaches it (its state is kept). A kernel the server no longer has stops here.
   */
  async reconnect(kernel: JupyterKernel): Promise<boolean> {
    if (kernel.alive) return true
    if (kernel.stopped !== undefined) return false
    const model = await getKernel(this.http, kernel.id)
    if (!model || model.execution_state === 'dead') {
      kernel.stop(whyStopped(model ? 'dead' : 'gone'))
      return false
    }
    kernel.attach(await KernelChannel.open(this.http, kernel.id))
    return true
  }

  /** Restarts a kernel through the server's restart API: the same id, a new process, a new channel. */
  async restart(kernel: JupyterKernel): Promise<JupyterKernel> {
    // Stopped first: the restart's own status messages are not news, and should the restart fail,
    // the next request starts a new kernel rather than reach this one again.
    kernel.stop('Analyst restarted it')
    await restartKernel(this.http, kernel.id)
    return new JupyterKernel(kernel.id, kernel.cwd, await KernelChannel.open(this.http, kernel.id))
  }

  /**
   * Ends a kernel: deleted now when it runs; deleted in the background when it stopped, since the
   * server may be restarting it and then ignores or refuses a delete.
   */
  stop(kernel: JupyterKernel): Promise<void> {
    return kernel.endOnce(async () => {
      if (kernel.stopped === undefined) {
        kernel.stop('it was shut down')
        return this.delete(kernel.id)
      }
      this.retire(kernel.id)
    })
  }

  private async delete(id: string) {
    await deleteKernel(this.http, id).catch(() => {})
    this.records.remove(id)
  }

  /**
   * Deletes a kernel in the background, asked again until it is gone. Its record stays until
   * then, so a crash meanwhile leaves it to the next start's clean-up of leftovers.
   */
  private retire(id: string) {
    const retired = (async () => {
      const deadline = Date.now() + RETIRE_TIMEOUT_MS
      while (Date.now() < deadline) {
        await deleteKernel(this.http, id).catch(() => {})
        const model = await getKernel(this.http, id).catch(() => null)
        if (model === undefined) return this.records.remove(id)
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
    })()
    this.retiring.add(retired)
    void retired.catch(() => {}).finally(() => this.retiring.delete(retired))
  }

  /** Waits for the kernels being retired to be gone (or given up on). */
  async settled(): Promise<void> {
    await Promise.all(this.retiring)
  }
}

/** Why a kernel stopped, from the state the server or its watchdog gave: for the next cell's notice. */
export function whyStopped(state: string): string {
  if (state === 'dead') return 'it died'
  if (state === 'gone') return 'it was gone from the Jupyter server'
  return 'the Jupyter server restarted it after it died'
}
