/**
 * The host's side of Analyst's kernel protocol (protocol.ts), whatever carries it: requests out,
 * messages in, each routed to the cell, command or request waiting for it. A transport (a local
 * process's pipes, a Modal exec's stdin/stdout) subclasses it with `write` and its end.
 * @module
 */
import { channel } from 'node:diagnostics_channel'
import type { Language } from '../backend.js'
import { SandboxError, SandboxUnavailableError } from '../errors.js'
import type { HostRequest, KernelMessage } from './protocol.js'
import { parseMessage } from './protocol.js'

export type CellHandler = (message: KernelMessage) => void
export type ProcessMessage = Extract<KernelMessage, { type: 'proc-started' | 'proc-out' | 'proc-exit' }>
export type ProcessHandler = (message: ProcessMessage) => void
/** What the kernel asks of the host while a cell runs: sql() and describe_table(). */
export type HostQuestion = Extract<KernelMessage, { type: 'query' | 'query-cancel' | 'describe-table' }>

/**
 * A forked kernel's start, phase by phase, for benchmarks (bench/fork-cost.mjs): published when
 * its ready message carries the phases (CLOCK_MONOTONIC ns, as process.hrtime.bigint()).
 */
export const forkTrace = channel('analyst:fork-trace')

export abstract class KernelChannel<Exit extends Error> {
  protected readonly cells = new Map<string, { handler: CellHandler; reject: (error: Error) => void }>()
  protected readonly waiters = new Map<string, (message?: KernelMessage) => void>()
  /** Shell commands that have not exited, by request id. */
  protected readonly processes = new Map<string, ProcessHandler>()
  protected exitError: Exit | undefined
  protected abstract readonly exited: Promise<Exit>
  /** The kernel's pid where it runs, from its `ready` message. */
  readyPid: number | undefined
  /** Messages that the kernel sent that failed validation or were too large. */
  dropped = 0
  /** Answers sql() and describe_table() (the backend's, when the sandbox has sources). */
  onQuestion: ((question: HostQuestion) => void) | undefined

  /** Sends one line to the kernel. */
  protected abstract write(line: string): void
  /** The kernel has work in flight (a local kernel keeps the host's event loop alive then). */
  protected busy(): void {}
  /** The kernel has nothing in flight. */
  protected idle(): void {}

  get alive(): boolean {
    return this.exitError === undefined
  }

  /** Resolves when the kernel has ended, however it ended. */
  whenExited(): Promise<Exit> {
    return this.exited
  }

  private idleWhenDone() {
    if (this.cells.size === 0 && this.processes.size === 0) this.idle()
  }

  /** The kernel ended: its cell fails, its commands (which ended with it) exit. */
  protected ended(exit: Exit) {
    this.exitError = exit
    for (const { reject } of this.cells.values()) reject(exit)
    this.cells.clear()
    for (const [id, handler] of this.processes) {
      handler({
        type: 'proc-exit',
        id,
        code: -1,
        error: 'the sandbox kernel stopped, and its commands with it',
      })
    }
    this.processes.clear()
  }

  protected receive(line: string) {
    const message = parseMessage(line)
    if (!message) {
      this.dropped++
      return
    }
    switch (message.type) {
      case 'ready':
        this.readyPid = message.pid
        if (message.trace && forkTrace.hasSubscribers)
          forkTrace.publish({ pid: message.pid, phases: [...message.trace, ['node ready', nowNs()]] })
        return this.waiters.get('ready')?.(message)
      case 'proc-started':
      case 'proc-out':
      case 'proc-exit': {
        const handler = this.processes.get(message.id)
        if (message.type === 'proc-exit') {
          this.processes.delete(message.id)
          this.idleWhenDone()
        }
        return handler?.(message)
      }
      case 'query':
      case 'query-cancel':
      case 'describe-table':
        return this.onQuestion?.(message)
      case 'context-created':
      case 'env-set': {
        const key = `${message.type}:${message.id ?? ''}`
        this.waiters.get(key)?.(message)
        this.waiters.delete(key)
        return
      }
      default:
        this.cells.get(message.id)?.handler(message)
    }
  }

  /** Sends a request or an answer; ignored once the kernel has ended (an answer to a gone kernel). */
  answer(request: HostRequest) {
    if (this.alive) this.send(request)
  }

  protected send(request: HostRequest) {
    if (this.exitError) throw this.exitError
    this.write(`${JSON.stringify(request)}\n`)
  }

  /** Sends a cell; `handler` sees its messages until `done`, after which the promise resolves. */
  execute(request: Extract<HostRequest, { type: 'execute' }>, handler: CellHandler): Promise<number | null> {
    return new Promise((resolve, reject) => {
      if (this.exitError) return reject(this.exitError)
      this.busy()
      const finish = () => {
        this.cells.delete(request.id)
        this.idleWhenDone()
      }
      this.cells.set(request.id, {
        handler: (message) => {
          handler(message)
          if (message.type === 'done') {
            finish()
            resolve(message.count)
          }
        },
        reject: (error) => {
          finish()
          reject(error)
        },
      })
      this.send(request)
    })
  }

  /** Asks the kernel to raise KeyboardInterrupt in the cell, if it is still running it. */
  interrupt(id: string) {
    if (this.alive) this.send({ type: 'interrupt', id })
  }

  private request(key: string, request: HostRequest): Promise<KernelMessage | undefined> {
    this.busy()
    return new Promise<KernelMessage | undefined>((resolve, reject) => {
      this.waiters.set(key, resolve)
      this.exited.then(reject)
      this.send(request)
    }).finally(() => this.idleWhenDone())
  }

  /**
   * Starts a shell command beside the kernel; resolves with its pid. `handler` sees its output
   * and, last, its `proc-exit` (also when the kernel ends).
   */
  spawn(request: Extract<HostRequest, { type: 'spawn' }>, handler: ProcessHandler): Promise<number> {
    return new Promise((resolve, reject) => {
      if (this.exitError) return reject(this.exitError)
      this.busy()
      let started = false
      this.processes.set(request.id, (message) => {
        if (message.type === 'proc-started') {
          started = true
          resolve(message.pid)
        } else if (!started && message.type === 'proc-exit') {
          reject(new SandboxError(message.error ?? 'The command could not start'))
        }
        if (started) handler(message)
      })
      this.send(request)
    })
  }

  /** Sends stdin, close-stdin, a signal or a terminal size to a running command; ignored once it has exited. */
  control(
    request: Extract<
      HostRequest,
      { type: 'proc-stdin' | 'proc-close-stdin' | 'proc-signal' | 'proc-resize' }
    >,
  ) {
    if (this.alive && this.processes.has(request.id)) this.send(request)
  }

  /** A new context (or a fresh one under the same id); refused when its language cannot run in the sandbox. */
  async createContext(id: string, cwd?: string, language: Language = 'python'): Promise<void> {
    const request: HostRequest = { type: 'context', id, cwd, ...(language === 'python' ? {} : { language }) }
    const created = await this.request(`context-created:${id}`, request)
    if (created?.type === 'context-created' && created.error) {
      throw new SandboxUnavailableError(`No ${language} context in this sandbox: ${created.error}`, {
        hint:
          language === 'python' ? undefined : 'Install it where the sandbox runs (npm run setup installs R).',
      })
    }
  }

  /** Ends a context's own process (another language's), if it has one. */
  removeContext(id: string) {
    if (this.alive) this.send({ type: 'context-remove', id })
  }

  async setEnv(id: string, envs: Record<string, string>): Promise<void> {
    await this.request(`env-set:${id}`, { type: 'env', id, envs })
  }
}

function nowNs(): number {
  return Number(process.hrtime.bigint())
}
