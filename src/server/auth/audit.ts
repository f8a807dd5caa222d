/**
 * The audit log: sign-ins (and refusals), sign-outs, API keys made and revoked, shares, and admin
 * actions; each kept in the store (GET /api/admin/audit) and written as a JSON line to the log.
 * @module
 */
import type { Logger } from 'pino'
import type { AuditInput, AuthStore } from '../../store/index.js'

export class AuditLog {
  constructor(
    private readonly store: AuthStore,
    private readonly logger?: Logger,
  ) {}

  async record(entry: AuditInput): Promise<void> {
    const stored = await this.store.appendAudit(entry)
    this.logger?.info({ audit: stored }, `audit: ${entry.action}`)
  }
}
