/**
 * A sandbox as the E2B API serves it: the library's `Sandbox`, plus the backend's optional calls
 * that only this door needs (envd's detailed listings, folder watches, metrics).
 * @module
 */
import {
  type DoWatchOptions,
  type EntryInfo,
  type FolderWatch,
  Sandbox,
  type SandboxBackend,
  type SandboxCreateOptions,
  type SandboxMetrics,
  type SandboxProvider,
} from '../../sandbox/index.js'

export class ServedSandbox extends Sandbox {
  private constructor(private readonly engine: SandboxBackend) {
    super(engine)
  }

  static async start(provider: SandboxProvider, options: SandboxCreateOptions): Promise<ServedSandbox> {
    return new ServedSandbox(await provider.doCreate(options))
  }

  /** A folder's entries with envd's details (mode, owner, time, links); plain entries where the engine has none. */
  list(path: string): Promise<EntryInfo[]> {
    return this.engine.doList(path, { details: true })
  }

  stat(path: string): Promise<EntryInfo | undefined> {
    return this.engine.doStat(path, { details: true })
  }

  /** The engine keeps E2B's file metadata. */
  get keepsMetadata(): boolean {
    return this.engine.doSetMetadata !== undefined
  }

  /** Replaces a file's metadata (nothing where the engine keeps none). */
  async setMetadata(path: string, metadata: Record<string, string>): Promise<void> {
    await this.engine.doSetMetadata?.(path, metadata)
  }

  /** Watches a folder where the engine can (inotify); undefined where it cannot, and the caller polls. */
  watch(path: string, options: DoWatchOptions): Promise<FolderWatch> | undefined {
    return this.engine.doWatch?.(path, options)
  }

  /** Undefined where the engine does not measure its sandboxes. */
  metrics(): Promise<SandboxMetrics> | undefined {
    return this.engine.doMetrics?.()
  }
}
