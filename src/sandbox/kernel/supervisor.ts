/**
 * One restart policy for a sandbox's kernel, in the manner of jupyter_client's restarter.py: the
 * supervisor owns the running kernel and decides when a new one starts, how often, and what the
 * next cell is told. Engines only start and stop kernels (their provisioners).
 * @module
 */
import { SandboxError } from '../errors.js'

/** What the supervisor needs to know of a kernel. */
export interface Supervised {
  readonly alive: boolean
}

export interface SupervisorOptions<K extends Supervised> {
  /** Starts a new kernel, ready for requests. */
  start(): Promise<K>
  /** Ends a kernel, or frees what one that stopped still holds (it is replaced, or started after the sandbox was closed). */
  stop(kernel: K): Promise<unknown>
  /**
   * A kernel whose `alive` says no may still run where only the connection to it dropped (a
   * Jupyter kernel's socket): connected to again, true; false when it stopped. Not a restart:
   * its state is kept and the next cell is told nothing. @default it stopped
   */
  reconnect?(kernel: K): Promise<boolean>
  /** A new kernel in place of one still running (a Jupyter server's restart API), instead of a stop and a start. */
  restartInPlace?(kernel: K): Promise<K>
  /** Why a kernel stopped, for the user: `exit code 3`, `out of memory: …`. */
  describe(kernel: K): Promise<string>
  /** What a new kernel gets before it takes requests (the contexts the old one had). */
  prepare?(kernel: K): Promise<void>
  /** Kernels in a row that stop before they are sent a cell, after which no new one is started. @default 5 */
  restartLimit?: number
  /** What is lost when a kernel stops, said with each notice. */
  lost: string | (() => string)
  /** The error once the sandbox is closed. */
  closedError(): Error
}

export interface RestartOptions {
  /**
   * The caller asked for a fresh kernel (a context restarted) rather than one that stopped: it
   * does not count towards the restart limit.
   */
  asked?: boolean
}

export class KernelSupervisor<K extends Supervised> {
  private kernel: K | undefined
  private restarting: Promise<K> | undefined
  private reconnecting: Promise<boolean> | undefined
  private closed = false
  private notice: string | undefined
  /** New kernels in a row that stopped before a cell was sent to them. */
  private unstable = 0

  /** `kernel` undefined: the first one starts with the first request, under the same rules. */
  constructor(
    kernel: K | undefined,
    private readonly options: SupervisorOptions<K>,
  ) {
    this.kernel = kernel
  }

  /** The kernel as it is now, alive or not. */
  get current(): K {
    if (!this.kernel) throw new SandboxError('No kernel has started yet')
    return this.kernel
  }

  /**
   * The kernel to send a request to. One that stopped since the last request is replaced first,
   * and the next cell is told (`takeNotice`).
   */
  async ready(): Promise<K> {
    for (;;) {
      if (this.closed) throw this.options.closedError()
      if (this.restarting) {
        await this.restarting
        continue
      }
      const kernel = this.kernel
      if (kernel && (kernel.alive || (await this.reconnected(kernel)))) return kernel
      if (kernel) {
        const why = await this.options.describe(kernel)
        if (kernel !== this.kernel) continue // replaced meanwhile, by another request
        const { lost } = this.options
        this.notice = `[The kernel had stopped since the last cell (${why}). ${typeof lost === 'string' ? lost : lost()}]\n`
      }
      await this.restart()
    }
  }

  /** One reconnection at a time, shared by the requests that find the kernel unreachable. */
  private reconnected(kernel: K): Promise<boolean> {
    if (!this.options.reconnect) return Promise.resolve(false)
    this.reconnecting ??= this.options.reconnect(kernel).finally(() => {
      this.reconnecting = undefined
    })
    return this.reconnecting
  }

  /**
   * Starts a new kernel now, in place of one that stopped during a cell or ignored an interrupt
   * (the cell itself says so), or that the caller wants fresh. One restart at a time; a failure
   * reaches whoever awaits it.
   */
  restart(options: RestartOptions = {}): Promise<K> {
    this.restarting ??= this.replace(options.asked ?? false).finally(() => {
      this.restarting = undefined
    })
    this.restarting.catch(() => {}) // reported to the next request, which awaits it
    return this.restarting
  }

  private async replace(asked: boolean): Promise<K> {
    if (this.closed) throw this.options.closedError()
    const limit = this.options.restartLimit ?? 5
    if (this.unstable >= limit) {
      throw new SandboxError(
        `The kernel stopped ${this.unstable} times in a row before it could run a cell: this sandbox no longer restarts it`,
        {
          hint: 'Kill the sandbox and create a new one; look at what the last kernel printed (the cell before).',
        },
      )
    }
    if (!asked) this.unstable++
    const old = this.kernel
    let fresh: K
    if (old?.alive && this.options.restartInPlace) fresh = await this.options.restartInPlace(old)
    else {
      if (old) await this.options.stop(old)
      fresh = await this.options.start()
    }
    try {
      // Closed while it started, or while it was prepared: nothing would ever end it.
      if (this.closed) throw this.options.closedError()
      await this.options.prepare?.(fresh)
      if (this.closed) throw this.options.closedError()
    } catch (error) {
      await this.options.stop(fresh)
      throw error
    }
    this.kernel = fresh
    return fresh
  }

  /** A cell is sent to the current kernel: it started well, and the restart count begins again. */
  running() {
    this.unstable = 0
  }

  /** What the next cell is told of the kernel it runs in (a new one, and why), once. */
  takeNotice(): string | undefined {
    const notice = this.notice
    this.notice = undefined
    return notice
  }

  /** No new kernel from now on; waits for a start in flight. Returns the kernel to end, if one started. */
  async close(): Promise<K | undefined> {
    this.closed = true
    await this.restarting?.catch(() => {})
    await this.reconnecting?.catch(() => {})
    return this.kernel
  }
}
