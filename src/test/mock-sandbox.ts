/**
 * A sandbox provider that runs nothing: each cell gets a scripted (or echoed) execution at once.
 * For tests and benchmarks of code that uses a Sandbox, without Python.
 * @module
 */

import { NotFoundError } from '../errors.js'
import type {
  Context,
  DoExecuteOptions,
  EntryInfo,
  ExecutionEvent,
  Language,
  SandboxBackend,
  SandboxCreateOptions,
  SandboxProvider,
} from '../sandbox/backend.js'
import { sandboxKilled } from '../sandbox/errors.js'

/**
 * What a mock cell produces: events in order (`finish` is added). An async cell can wait between
 * its events (e.g. until a test lets it go); as on every backend, an abort of the run's signal
 * interrupts it, and the run rejects with the signal's reason.
 */
export type MockCell = (
  code: string,
  options: { signal?: AbortSignal },
) => ExecutionEvent[] | AsyncIterable<ExecutionEvent>

/** By default a cell prints its own length: enough to see that it "ran". */
const echo: MockCell = (code) => [{ type: 'stdout', text: `ran ${code.length} characters\n` }]

/** What a test can see of one mock sandbox. */
export interface MockSandboxRecord {
  sandboxId: string
  /** Names of the data files it was given, in order. */
  data: string[]
  /** The template it was asked to start from, by name or id. */
  template?: string
  killed: boolean
}

class MockSandbox implements SandboxBackend {
  readonly specificationVersion = 'v1'
  readonly provider = 'mock'
  languages?: readonly Language[]
  readonly files = new Map<string, Uint8Array>()
  private readonly contexts = new Set<string>()
  count = 0
  readonly record: MockSandboxRecord
  constructor(
    readonly sandboxId: string,
    private readonly cell: MockCell,
    readonly calls: DoExecuteOptions[],
  ) {
    this.record = { sandboxId, data: [], killed: false }
  }

  /** Refuses every call once killed, as a real engine does. */
  private alive() {
    if (this.record.killed) throw sandboxKilled()
  }

  async doExecute(options: DoExecuteOptions) {
    this.alive()
    if (
      options.contextId !== undefined &&
      options.contextId !== 'default' &&
      !this.contexts.has(options.contextId)
    )
      throw new NotFoundError(`No context ${options.contextId} in this sandbox`)
    this.calls.push(options)
    const events = this.cell(options.code, { signal: options.signal })
    if (Array.isArray(events)) for (const event of events) this.emit(event, options)
    else await this.stream(events, options)
    options.onEvent({ type: 'finish', executionCount: ++this.count })
  }
  private emit(event: ExecutionEvent, options: DoExecuteOptions) {
    // A cell that saves a file: keep it, so reading the artifact back works.
    if (event.type === 'artifact')
      this.files.set(event.artifact.name, new TextEncoder().encode(event.artifact.name))
    options.onEvent(event)
  }
  private async stream(events: AsyncIterable<ExecutionEvent>, options: DoExecuteOptions) {
    const { signal } = options
    signal?.throwIfAborted()
    let onAbort = () => {}
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal?.reason)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
    const iterator = events[Symbol.asyncIterator]()
    try {
      for (;;) {
        const next = await Promise.race([iterator.next(), aborted])
        if (next.done) return
        this.emit(next.value, options)
      }
    } finally {
      signal?.removeEventListener('abort', onAbort)
      void iterator.return?.()
    }
  }
  async doCreateContext(options: { cwd?: string }): Promise<Context> {
    this.alive()
    const context: Context = {
      id: `ctx-${this.contexts.size + 1}`,
      language: 'python',
      cwd: options.cwd ?? '/home/user',
    }
    this.contexts.add(context.id)
    return context
  }
  async doRestartContext(contextId: string) {
    this.alive()
    if (contextId !== 'default' && !this.contexts.has(contextId))
      throw new NotFoundError(`No context ${contextId} in this sandbox`)
  }
  async doRemoveContext(contextId: string) {
    this.alive()
    if (!this.contexts.delete(contextId)) throw new NotFoundError(`No context ${contextId} in this sandbox`)
  }
  private entry(path: string, size: number): EntryInfo {
    return { name: path.split('/').at(-1) ?? path, type: 'file', path: `/home/user/${path}`, size }
  }
  async doWriteFile(path: string, data: Uint8Array) {
    this.alive()
    this.files.set(path, data)
    return this.entry(path, data.length)
  }
  async doReadFile(path: string) {
    this.alive()
    const data = this.files.get(path)
    if (!data) throw new NotFoundError(`${path}: no such file in the sandbox`)
    return data
  }
  async doList() {
    this.alive()
    return [...this.files].map(([path, data]) => this.entry(path, data.length))
  }
  async doStat(path: string) {
    this.alive()
    const data = this.files.get(path)
    return data ? this.entry(path, data.length) : undefined
  }
  async doRemove(path: string) {
    this.alive()
    this.files.delete(path)
  }
  async doAddData(_hostPath: string, name: string) {
    this.alive()
    this.record.data.push(name)
    return this.entry(`data/${name}`, 0)
  }
  async doKill() {
    this.record.killed = true
    this.files.clear()
  }
}

export class MockSandboxProvider implements SandboxProvider {
  readonly specificationVersion = 'v1'
  readonly name = 'mock'
  /** Every cell run by every sandbox of this provider, in order. */
  readonly calls: DoExecuteOptions[] = []
  /** Every sandbox it made, in order. */
  readonly sandboxes: MockSandboxRecord[] = []
  constructor(
    private readonly cell: MockCell = echo,
    /** The languages its sandboxes run (their cells are all mock cells). @default python only */
    private readonly languages?: readonly Language[],
  ) {}

  async doCreate(options: SandboxCreateOptions): Promise<SandboxBackend> {
    const sandbox = new MockSandbox(`mock-${this.sandboxes.length + 1}`, this.cell, this.calls)
    if (this.languages) sandbox.languages = this.languages
    this.sandboxes.push(sandbox.record)
    if (options.template !== undefined)
      sandbox.record.template = typeof options.template === 'string' ? options.template : options.template.id
    for (const item of options.data ?? []) {
      await sandbox.doAddData('', typeof item === 'string' ? (item.split('/').pop() ?? item) : item.name)
    }
    return sandbox
  }
}
