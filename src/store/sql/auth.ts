/**
 * Users, browser sessions, API keys, shares and the audit log in the history database: plain
 * Kysely queries, the same on SQLite and PostgreSQL. Secrets never reach it, only their SHA-256:
 * a copy of the database signs nobody in.
 * @module
 */
import { randomBytes, randomUUID } from 'node:crypto'
import type { Kysely, Selectable } from 'kysely'
import type {
  AuditInput,
  AuthChange,
  AuthChanges,
  AuthStore,
  StoredApiKey,
  StoredAudit,
  StoredBrowserSession,
  StoredShare,
  StoredUser,
} from '../types.js'
import { type AuthFeed, LocalAuthFeed } from './auth-feed.js'
import type {
  ApiKeysTable,
  AuditTable,
  BrowserSessionsTable,
  Database,
  SharesTable,
  UsersTable,
} from './schema.js'
import { now } from './store.js'

function toUser(row: Selectable<UsersTable>): StoredUser {
  return {
    id: row.id,
    issuer: row.issuer,
    subject: row.subject,
    name: row.name,
    ...(row.email ? { email: row.email } : {}),
    groups: JSON.parse(row.groups) as string[],
    admin: Number(row.admin) === 1,
    disabled: Number(row.disabled) === 1,
    createdAt: row.created_at,
    ...(row.last_seen_at ? { lastSeenAt: row.last_seen_at } : {}),
  }
}

function toBrowserSession(row: Selectable<BrowserSessionsTable>): StoredBrowserSession {
  return {
    hash: row.hash,
    userId: row.user_id,
    csrfToken: row.csrf_token,
    ...(row.id_token ? { idToken: row.id_token } : {}),
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    expiresAt: row.expires_at,
  }
}

function toKey(row: Omit<Selectable<ApiKeysTable>, 'hash'>): StoredApiKey {
  return {
    id: row.id,
    userId: row.user_id,
    label: row.label,
    createdAt: row.created_at,
    ...(row.last_used_at ? { lastUsedAt: row.last_used_at } : {}),
    ...(row.expires_at ? { expiresAt: row.expires_at } : {}),
  }
}

function toShare(row: Selectable<SharesTable>): StoredShare {
  return {
    id: row.id,
    sessionId: row.session_id,
    allowFiles: Number(row.allow_files) === 1,
    createdBy: row.created_by,
    createdAt: row.created_at,
  }
}

function toAudit(row: Selectable<AuditTable>): StoredAudit {
  return {
    id: Number(row.id),
    at: row.at,
    action: row.action,
    ...(row.actor ? { actor: row.actor } : {}),
    ...(row.target ? { target: row.target } : {}),
    ...(row.detail ? { detail: JSON.parse(row.detail) as Record<string, unknown> } : {}),
  }
}

/** Columns of the users table under a prefix, to read a user joined to another row. */
const USER_COLUMNS = [
  'id',
  'issuer',
  'subject',
  'name',
  'email',
  'groups',
  'admin',
  'disabled',
  'created_at',
  'last_seen_at',
] as const

export class SqlAuthStore implements AuthStore {
  readonly specificationVersion = 'v1'

  /** `feed`: where changes go; PostgreSQL's also tells the other replicas. */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly feed: AuthFeed = new LocalAuthFeed(),
  ) {}

  get changes(): AuthChanges {
    return this.feed
  }

  /** A write whose change the feed announces in its transaction and tells this process after the commit. */
  private async changing<T>(
    write: (trx: Kysely<Database>) => Promise<T>,
    changeOf: (result: T) => AuthChange | undefined,
  ): Promise<T> {
    let change: AuthChange | undefined
    const result = await this.db.transaction().execute(async (trx) => {
      const written = await write(trx)
      change = changeOf(written)
      if (change) await this.feed.announce(trx, change)
      return written
    })
    if (change) this.feed.emit(change)
    return result
  }

  // ------------------------------------------------------------------ users

  async upsertUser(input: {
    issuer: string
    subject: string
    name: string
    email?: string
    groups: string[]
    admin: boolean
  }): Promise<StoredUser> {
    const at = now()
    const changes = {
      name: input.name,
      email: input.email ?? null,
      groups: JSON.stringify(input.groups),
      admin: input.admin ? 1 : 0,
      last_seen_at: at,
    }
    // Name, groups and admin may have changed: copies of the user go.
    return this.changing(
      async (trx) => {
        await trx
          .insertInto('users')
          .values({
            id: randomUUID(),
            issuer: input.issuer,
            subject: input.subject,
            disabled: 0,
            created_at: at,
            ...changes,
          })
          .onConflict((oc) => oc.columns(['issuer', 'subject']).doUpdateSet(changes))
          .execute()
        const row = await trx
          .selectFrom('users')
          .selectAll()
          .where('issuer', '=', input.issuer)
          .where('subject', '=', input.subject)
          .executeTakeFirstOrThrow()
        return toUser(row)
      },
      (user) => ({ kind: 'user', id: user.id }),
    )
  }

  async getUser(id: string): Promise<StoredUser | undefined> {
    const row = await this.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
    return row ? toUser(row) : undefined
  }

  async listUsers(): Promise<StoredUser[]> {
    const rows = await this.db.selectFrom('users').selectAll().orderBy('created_at').execute()
    return rows.map(toUser)
  }

  async setUserDisabled(id: string, disabled: boolean): Promise<boolean> {
    return this.changing(
      async (trx) => {
        const result = await trx
          .updateTable('users')
          .set({ disabled: disabled ? 1 : 0 })
          .where('id', '=', id)
          .executeTakeFirst()
        if (disabled) await trx.deleteFrom('browser_sessions').where('user_id', '=', id).execute()
        return Number(result.numUpdatedRows) > 0
      },
      (found) => (found ? { kind: 'user', id } : undefined),
    )
  }

  /** A user's row joined to another table's, taken apart again. */
  private userOf(row: Record<string, unknown>): StoredUser {
    const user = Object.fromEntries(USER_COLUMNS.map((column) => [column, row[`u_${column}`]]))
    return toUser(user as unknown as Selectable<UsersTable>)
  }

  private userColumns() {
    return USER_COLUMNS.map((column) => `users.${column} as u_${column}` as const)
  }

  // ------------------------------------------------------------------ sign-ins under way

  async putLoginAttempt(hash: string, data: Record<string, string>, expiresAt: string): Promise<void> {
    const at = now()
    // Attempts never finished (the tab was closed) go as new ones come.
    await this.db.deleteFrom('login_attempts').where('expires_at', '<', at).execute()
    await this.db
      .insertInto('login_attempts')
      .values({ hash, data: JSON.stringify(data), expires_at: expiresAt })
      .execute()
  }

  async takeLoginAttempt(hash: string): Promise<Record<string, string> | undefined> {
    const row = await this.db
      .deleteFrom('login_attempts')
      .where('hash', '=', hash)
      .returning(['data', 'expires_at'])
      .executeTakeFirst()
    if (!row || row.expires_at < now()) return undefined
    return JSON.parse(row.data) as Record<string, string>
  }

  // ------------------------------------------------------------------ browser sessions

  async createBrowserSession(session: Omit<StoredBrowserSession, 'createdAt' | 'lastUsedAt'>): Promise<void> {
    const at = now()
    await this.db
      .insertInto('browser_sessions')
      .values({
        hash: session.hash,
        user_id: session.userId,
        csrf_token: session.csrfToken,
        id_token: session.idToken ?? null,
        created_at: at,
        last_used_at: at,
        expires_at: session.expiresAt,
      })
      .execute()
  }

  async getBrowserSession(
    hash: string,
  ): Promise<{ session: StoredBrowserSession; user: StoredUser } | undefined> {
    const row = await this.db
      .selectFrom('browser_sessions')
      .innerJoin('users', 'users.id', 'browser_sessions.user_id')
      .selectAll('browser_sessions')
      .select(this.userColumns())
      .where('browser_sessions.hash', '=', hash)
      .executeTakeFirst()
    if (!row) return undefined
    return { session: toBrowserSession(row), user: this.userOf(row) }
  }

  async touchBrowserSession(hash: string, at: string): Promise<void> {
    await this.db.updateTable('browser_sessions').set({ last_used_at: at }).where('hash', '=', hash).execute()
  }

  async deleteBrowserSession(hash: string): Promise<void> {
    await this.changing(
      (trx) => trx.deleteFrom('browser_sessions').where('hash', '=', hash).executeTakeFirst(),
      (result) => (Number(result.numDeletedRows) > 0 ? { kind: 'session', id: hash } : undefined),
    )
  }

  // ------------------------------------------------------------------ API keys

  async createApiKey(input: {
    userId: string
    label: string
    hash: string
    expiresAt?: string
  }): Promise<StoredApiKey> {
    const row = {
      id: randomUUID(),
      user_id: input.userId,
      label: input.label,
      hash: input.hash,
      created_at: now(),
      last_used_at: null,
      expires_at: input.expiresAt ?? null,
    }
    await this.db.insertInto('api_keys').values(row).execute()
    return toKey(row)
  }

  async findApiKey(hash: string): Promise<{ key: StoredApiKey; user: StoredUser } | undefined> {
    const row = await this.db
      .selectFrom('api_keys')
      .innerJoin('users', 'users.id', 'api_keys.user_id')
      .selectAll('api_keys')
      .select(this.userColumns())
      .where('api_keys.hash', '=', hash)
      .executeTakeFirst()
    if (!row) return undefined
    return { key: toKey(row), user: this.userOf(row) }
  }

  async listApiKeys(userId: string): Promise<StoredApiKey[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .select(['id', 'user_id', 'label', 'created_at', 'last_used_at', 'expires_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at', 'desc')
      .execute()
    return rows.map(toKey)
  }

  async revokeApiKey(userId: string, id: string): Promise<boolean> {
    return this.changing(
      async (trx) => {
        const result = await trx
          .deleteFrom('api_keys')
          .where('id', '=', id)
          .where('user_id', '=', userId)
          .executeTakeFirst()
        return Number(result.numDeletedRows) > 0
      },
      (found) => (found ? { kind: 'key', id } : undefined),
    )
  }

  async touchApiKey(id: string, at: string): Promise<void> {
    await this.db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute()
  }

  // ------------------------------------------------------------------ shares

  async share(input: { sessionId: string; createdBy: string; allowFiles: boolean }): Promise<StoredShare> {
    await this.db
      .insertInto('shares')
      .values({
        // 128 random bits: the link is the only thing a viewer needs besides signing in.
        id: randomBytes(16).toString('base64url'),
        session_id: input.sessionId,
        allow_files: input.allowFiles ? 1 : 0,
        created_by: input.createdBy,
        created_at: now(),
      })
      .onConflict((oc) => oc.column('session_id').doUpdateSet({ allow_files: input.allowFiles ? 1 : 0 }))
      .execute()
    const row = await this.db
      .selectFrom('shares')
      .selectAll()
      .where('session_id', '=', input.sessionId)
      .executeTakeFirstOrThrow()
    return toShare(row)
  }

  async getShare(id: string): Promise<StoredShare | undefined> {
    const row = await this.db.selectFrom('shares').selectAll().where('id', '=', id).executeTakeFirst()
    return row ? toShare(row) : undefined
  }

  async unshare(sessionId: string): Promise<boolean> {
    const result = await this.db.deleteFrom('shares').where('session_id', '=', sessionId).executeTakeFirst()
    return Number(result.numDeletedRows) > 0
  }

  // ------------------------------------------------------------------ audit

  async appendAudit(entry: AuditInput): Promise<StoredAudit> {
    const at = now()
    const row = await this.db
      .insertInto('audit')
      .values({
        at,
        action: entry.action,
        actor: entry.actor ?? null,
        target: entry.target ?? null,
        detail: entry.detail ? JSON.stringify(entry.detail) : null,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    return { id: Number(row.id), at, ...entry }
  }

  async audit(options: { limit?: number; actor?: string } = {}): Promise<StoredAudit[]> {
    let query = this.db.selectFrom('audit').selectAll()
    if (options.actor) query = query.where('actor', '=', options.actor)
    const rows = await query
      .orderBy('id', 'desc')
      .limit(options.limit ?? 200)
      .execute()
    return rows.map(toAudit)
  }
}
