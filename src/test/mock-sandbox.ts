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
  SandboxBackend,
  SandboxCreateOptions,
  SandboxProvider,
} from '../sandbox/backend.js'

/** What a mock cell produces: events in order (`finish` is added). */
export type MockCell = (code: string) => ExecutionEvent[]

/** By default a cell prints its own length: enough to see that it "ran". */
const echo: MockCell = (code) => [{ type: 'stdout', text: `ran ${code.length} characters\n` }]

class MockSandbox implements SandboxBackend {
  readonly specificationVersion = 'v1'
  readonly provider = 'mock'
  readonly files = new Map<string, Uint8Array>()
  count = 0
  constructor(
    readonly sandboxId: string,
    private readonly cell: MockCell,
    readonly calls: DoExecuteOptions[],
  ) {}

  async doExecute(options: DoExecuteOptions) {
    this.calls.push(options)
    for (const event of this.cell(options.code)) options.onEvent(event)
    options.onEvent({ type: 'finish', executionCount: ++this.count })
  }
  async doCreateContext(options: { cwd?: string }): Promise<Context> {
    return { id: `ctx-${this.count}`, language: 'python', cwd: options.cwd ?? '/home/user' }
  }
  private entry(path: string, size: number): EntryInfo {
    return { name: path.split('/').at(-1) ?? path, type: 'file', path: `/home/user/${path}`, size }
  }
  async doWriteFile(path: string, data: Uint8Array) {
    this.files.set(path, data)
    return this.entry(path, data.length)
  }
  async doReadFile(path: string) {
    const data = this.files.get(path)
    if (!data) throw new NotFoundError(`${path}: no such file in the sandbox`)
    return data
  }
  async doList() {
    return [...this.files].map(([path, data]) => this.entry(path, data.length))
  }
  async doStat(path: string) {
    const data = this.files.get(path)
    return data ? this.entry(path, data.length) : undefined
  }
  async doRemove(path: string) {
    this.files.delete(path)
  }
  async doAddData(_hostPath: string, name: string) {
    return this.entry(`data/${name}`, 0)
  }
  async doKill() {}
}

export class MockSandboxProvider implements SandboxProvider {
  readonly specificationVersion = 'v1'
  readonly name = 'mock'
  /** Every cell run by every sandbox of this provider, in order. */
  readonly calls: DoExecuteOptions[] = []
  private created = 0
  constructor(private readonly cell: MockCell = echo) {}

  async doCreate(_options: SandboxCreateOptions): Promise<SandboxBackend> {
    return new MockSandbox(`mock-${++this.created}`, this.cell, this.calls)
  }
}
