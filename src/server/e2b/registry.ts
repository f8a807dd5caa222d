/**
 * The sandboxes the E2B-compatible API has made: who owns each, its access tokens, its metadata
 * and its deadline, after which it is killed (as E2B's `timeout`).
 * @module
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { Sandbox } from '../../sandbox/index.js'

/** The envd version the API claims: the SDK enables features by it (octet-stream uploads, closeStdin). */
export const ENVD_VERSION = '0.5.7'

export interface SandboxEntry {
  id: string
  /** `ownerOf(token)`, or null when the server has no tokens. */
  owner: string | null
  templateID: string
  sandbox: Sandbox
  metadata: Record<string, string>
  /** Checked on every envd call (X-Access-Token). */
  envdAccessToken: string
  /** Checked on every code-interpreter call (E2B-Traffic-Access-Token). */
  trafficAccessToken: string
  startedAt: Date
  endAt: Date
  timer?: NodeJS.Timeout
}

/** An id or token no one can guess: 20 characters of base 36 from 120 random bits and more. */
export function unguessable(prefix = ''): string {
  return (
    prefix +
    BigInt(`0x${randomBytes(16).toString('hex')}`)
      .toString(36)
      .slice(0, 20)
  )
}

export function sameSecret(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

export class Registry {
  private readonly entries = new Map<string, SandboxEntry>()

  add(entry: SandboxEntry, timeoutSeconds: number) {
    this.entries.set(entry.id, entry)
    this.setTimeout(entry, timeoutSeconds, entry.startedAt.getTime())
  }

  get(id: string): SandboxEntry | undefined {
    return this.entries.get(id)
  }

  /** The entry when it exists and the owner made it; otherwise undefined (a stranger's looks missing). */
  owned(id: string, owner: string | null): SandboxEntry | undefined {
    const entry = this.entries.get(id)
    return entry && entry.owner === owner ? entry : undefined
  }

  list(owner: string | null): SandboxEntry[] {
    return [...this.entries.values()].filter((entry) => entry.owner === owner)
  }

  all(): SandboxEntry[] {
    return [...this.entries.values()]
  }

  /** Moves the deadline to `seconds` from now (or from `from`), as E2B's setTimeout does. */
  setTimeout(entry: SandboxEntry, seconds: number, from = Date.now()) {
    clearTimeout(entry.timer)
    entry.endAt = new Date(from + seconds * 1000)
    entry.timer = setTimeout(() => void this.kill(entry.id), Math.max(0, entry.endAt.getTime() - Date.now()))
    entry.timer.unref()
  }

  /** Removes and kills a sandbox; false when there was none. */
  async kill(id: string): Promise<boolean> {
    const entry = this.entries.get(id)
    if (!entry) return false
    this.entries.delete(id)
    clearTimeout(entry.timer)
    await entry.sandbox.kill().catch(() => {})
    return true
  }

  async killAll() {
    await Promise.all([...this.entries.keys()].map((id) => this.kill(id)))
  }
}
