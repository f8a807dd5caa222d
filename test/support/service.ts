/**
 * A session service over a fresh ANALYST_HOME in a temporary folder, for tests: the real SQLite
 * store and blob files, the provider and model the test gives. `close()` ends it and removes all.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { LanguageModel } from 'ai'
import type { SandboxProvider } from '../../src/sandbox/index.js'
import {
  type AnalystSettings,
  type ServiceObserver,
  SessionService,
  type SessionServiceOptions,
} from '../../src/session/index.js'
import { openStores, type Stores } from '../../src/store/index.js'

export interface TestService {
  service: SessionService
  stores: Stores
  home: string
  close(): Promise<void>
}

export async function openTestService(options: {
  provider: SandboxProvider
  model: LanguageModel
  spec?: string
  analyst?: AnalystSettings
  idleMs?: number
  observer?: ServiceObserver
  /** What every sandbox is made with, such as the door's sources. */
  sandbox?: SessionServiceOptions['sandbox']
  /** Where built templates are found by name or id. */
  templates?: SessionServiceOptions['templates']
}): Promise<TestService> {
  const home = mkdtempSync(join(tmpdir(), 'analyst-service-'))
  const stores = await openStores(home, {})
  const spec = options.spec ?? 'scripted:test'
  const service = new SessionService({
    history: stores.history,
    blobs: stores.blobs,
    provider: options.provider,
    model: async () => ({ model: options.model, spec, provider: 'custom', modelId: spec, mode: 'tools' }),
    analyst: options.analyst,
    cacheDir: join(home, 'cache'),
    idleMs: options.idleMs ?? 0,
    observer: options.observer,
    sandbox: options.sandbox,
    templates: options.templates,
  })
  return {
    service,
    stores,
    home,
    close: async () => {
      await service.shutdown()
      await stores.close()
      rmSync(home, { recursive: true, force: true })
    },
  }
}

/** Runs a question to its end; resolves to its events and result. */
export async function askAll(
  service: SessionService,
  sessionId: string,
  question: string,
  signal?: AbortSignal,
) {
  const events = []
  const asking = service.ask(sessionId, question, { signal })
  for (let next = await asking.next(); ; next = await asking.next()) {
    if (next.done) return { events, result: next.value }
    events.push(next.value)
  }
}
