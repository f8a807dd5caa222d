/**
 * What every store of users, browser sessions, API keys, shares and audit entries must do, as one
 * suite each database runs (SQLite and PostgreSQL): `describeAuthStoreConformance({ name, open })`.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { AuthChange, AuthStore, HistoryStore } from './types.js'

export interface OpenedAuthStores {
  history: HistoryStore
  auth: AuthStore
  close(): Promise<void>
}

const ISSUER = 'https://id.example.com'

export function describeAuthStoreConformance(options: {
  name: string
  open: () => Promise<OpenedAuthStores>
}) {
  describe(`auth store conformance: ${options.name}`, () => {
    let stores: OpenedAuthStores
    let auth: AuthStore
    beforeEach(async () => {
      stores = await options.open()
      auth = stores.auth
    })
    afterEach(async () => {
      await stores.close()
    })

    const alice = () =>
      auth.upsertUser({
        issuer: ISSUER,
        subject: 'alice',
        name: 'Alice',
        email: 'alice@example.com',
        groups: ['analysts'],
        admin: false,
      })

    it('makes a user at the first sign-in and refreshes them at the next, keeping id and disabled', async () => {
      const first = await alice()
      expect(first).toMatchObject({ subject: 'alice', name: 'Alice', groups: ['analysts'], admin: false })
      expect(first.disabled).toBe(false)
      expect(await auth.setUserDisabled(first.id, true)).toBe(true)
      const again = await auth.upsertUser({
        issuer: ISSUER,
        subject: 'alice',
        name: 'Alice B.',
        groups: ['analysts', 'admins'],
        admin: true,
      })
      expect(again).toMatchObject({ id: first.id, name: 'Alice B.', admin: true, disabled: true })
      expect(again.email).toBeUndefined()
      // The same subject at another issuer is another person.
      const other = await auth.upsertUser({
        issuer: 'https://other',
        subject: 'alice',
        name: 'A',
        groups: [],
        admin: false,
      })
      expect(other.id).not.toBe(first.id)
      expect((await auth.listUsers()).map((u) => u.id)).toEqual([first.id, other.id])
      expect(await auth.getUser(first.id)).toMatchObject({ name: 'Alice B.' })
      expect(await auth.getUser('nobody')).toBeUndefined()
      expect(await auth.setUserDisabled('nobody', true)).toBe(false)
    })

    it('keeps browser sessions by hash with their user; disabling the user ends them', async () => {
      const user = await alice()
      const expiresAt = new Date(Date.now() + 3_600_000).toISOString()
      await auth.createBrowserSession({
        hash: 'h1',
        userId: user.id,
        csrfToken: 'c1',
        idToken: 'id.t.x',
        expiresAt,
      })
      await auth.createBrowserSession({ hash: 'h2', userId: user.id, csrfToken: 'c2', expiresAt })
      const found = await auth.getBrowserSession('h1')
      expect(found?.session).toMatchObject({ hash: 'h1', csrfToken: 'c1', idToken: 'id.t.x', expiresAt })
      expect(found?.user).toMatchObject({ id: user.id, name: 'Alice', groups: ['analysts'], disabled: false })
      const later = new Date(Date.now() + 60_000).toISOString()
      await auth.touchBrowserSession('h1', later)
      expect((await auth.getBrowserSession('h1'))?.session.lastUsedAt).toBe(later)
      await auth.deleteBrowserSession('h1')
      expect(await auth.getBrowserSession('h1')).toBeUndefined()
      expect(await auth.getBrowserSession('h2')).toBeDefined()
      await auth.setUserDisabled(user.id, true)
      expect(await auth.getBrowserSession('h2')).toBeUndefined()
    })

    it('hands a sign-in under way out once, and never once expired', async () => {
      const later = new Date(Date.now() + 600_000).toISOString()
      await auth.putLoginAttempt('a1', { state: 's', nonce: 'n', verifier: 'v', next: '/' }, later)
      await auth.putLoginAttempt('a2', { state: 's2' }, new Date(Date.now() - 1000).toISOString())
      expect(await auth.takeLoginAttempt('a1')).toEqual({ state: 's', nonce: 'n', verifier: 'v', next: '/' })
      expect(await auth.takeLoginAttempt('a1')).toBeUndefined()
      expect(await auth.takeLoginAttempt('a2')).toBeUndefined()
      expect(await auth.takeLoginAttempt('nothing')).toBeUndefined()
    })

    it("keeps API keys by hash, lists them without secrets, revokes only the owner's", async () => {
      const user = await alice()
      const bob = await auth.upsertUser({
        issuer: ISSUER,
        subject: 'bob',
        name: 'Bob',
        groups: [],
        admin: false,
      })
      const expiresAt = new Date(Date.now() + 86_400_000).toISOString()
      const key = await auth.createApiKey({ userId: user.id, label: 'laptop', hash: 'k1', expiresAt })
      const second = await auth.createApiKey({ userId: user.id, label: 'ci', hash: 'k2' })
      expect(key).toMatchObject({ userId: user.id, label: 'laptop', expiresAt })
      expect(JSON.stringify(key)).not.toContain('k1')
      const found = await auth.findApiKey('k1')
      expect(found?.key.id).toBe(key.id)
      expect(found?.user.id).toBe(user.id)
      const listed = await auth.listApiKeys(user.id)
      expect(listed.map((k) => k.id)).toEqual([second.id, key.id])
      expect(JSON.stringify(listed)).not.toMatch(/"k[12]"/)
      const at = new Date().toISOString()
      await auth.touchApiKey(key.id, at)
      expect((await auth.findApiKey('k1'))?.key.lastUsedAt).toBe(at)
      expect(await auth.revokeApiKey(bob.id, key.id)).toBe(false)
      expect(await auth.findApiKey('k1')).toBeDefined()
      expect(await auth.revokeApiKey(user.id, key.id)).toBe(true)
      expect(await auth.findApiKey('k1')).toBeUndefined()
      expect(await auth.listApiKeys(user.id)).toHaveLength(1)
      await expect(auth.createApiKey({ userId: user.id, label: 'dup', hash: 'k2' })).rejects.toThrow()
    })

    it('shares a session by one unguessable link, updates it, revokes it, and forgets it with the session', async () => {
      const user = await alice()
      const session = await stores.history.createSession({ title: 'q', owner: `user:${user.id}` })
      const share = await auth.share({ sessionId: session.id, createdBy: user.id, allowFiles: false })
      expect(share.id).toMatch(/^[\w-]{22}$/)
      expect(share).toMatchObject({ sessionId: session.id, allowFiles: false, createdBy: user.id })
      const again = await auth.share({ sessionId: session.id, createdBy: user.id, allowFiles: true })
      expect(again).toMatchObject({ id: share.id, allowFiles: true })
      expect(await auth.getShare(share.id)).toMatchObject({ sessionId: session.id, allowFiles: true })
      expect(await auth.unshare(session.id)).toBe(true)
      expect(await auth.getShare(share.id)).toBeUndefined()
      expect(await auth.unshare(session.id)).toBe(false)
      const third = await auth.share({ sessionId: session.id, createdBy: user.id, allowFiles: false })
      expect(third.id).not.toBe(share.id)
      await stores.history.deleteSession(session.id)
      expect(await auth.getShare(third.id)).toBeUndefined()
    })

    it('tells its listeners of each change that ends or alters access by the time the write returns', async () => {
      expect(auth.changes.live).toBe(true)
      const heard: AuthChange[] = []
      const stop = auth.changes.subscribe((change) => heard.push(change))
      // PostgreSQL's notice of an earlier write may come late, as a copy: only presence is checked.
      const hears = async (change: AuthChange, write: () => Promise<unknown>) => {
        heard.length = 0
        await write()
        expect(heard).toContainEqual(change)
      }
      const user = await alice()
      expect(heard).toContainEqual({ kind: 'user', id: user.id })
      const key = await auth.createApiKey({ userId: user.id, label: 'ci', hash: 'c'.repeat(64) })
      const session = 'd'.repeat(64)
      await auth.createBrowserSession({
        hash: session,
        userId: user.id,
        csrfToken: 'csrf',
        expiresAt: '2999-01-01T00:00:00.000Z',
      })
      await hears({ kind: 'key', id: key.id }, () => auth.revokeApiKey(user.id, key.id))
      await hears({ kind: 'session', id: session }, () => auth.deleteBrowserSession(session))
      await hears({ kind: 'user', id: user.id }, () => auth.setUserDisabled(user.id, true))
      await hears({ kind: 'user', id: user.id }, () => auth.setUserDisabled(user.id, false))
      // No such user: nothing changed, nothing told.
      await auth.setUserDisabled('no-such-user', true)
      expect(heard).not.toContainEqual({ kind: 'user', id: 'no-such-user' })
      stop()
      heard.length = 0
      await auth.setUserDisabled(user.id, true)
      expect(heard).toEqual([])
    })

    it('appends audit entries and reads them newest first, by actor', async () => {
      await auth.appendAudit({ action: 'sign-in', actor: 'u1', detail: { ip: '127.0.0.1' } })
      await auth.appendAudit({ action: 'key-created', actor: 'u1', target: 'k1' })
      await auth.appendAudit({ action: 'sign-in-refused', detail: { reason: 'group' } })
      const all = await auth.audit()
      expect(all.map((e) => e.action)).toEqual(['sign-in-refused', 'key-created', 'sign-in'])
      expect(all[2]).toMatchObject({ actor: 'u1', detail: { ip: '127.0.0.1' } })
      expect((await auth.audit({ actor: 'u1' })).map((e) => e.target ?? null)).toEqual(['k1', null])
      expect(await auth.audit({ limit: 1 })).toHaveLength(1)
    })
  })
}
