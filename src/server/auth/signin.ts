/**
 * Who is calling: ANALYST_TOKEN tokens as before, a user's API key, or a signed-in browser's
 * cookie. A key or cookie is read from the store once, then served from the identity cache, which
 * the store's change feed empties of it at once when the key is revoked, the user disabled or the
 * session ended, on this replica or another; expiry and idleness are checked at every request. A cookie authorizes a state-changing request only with the
 * session's CSRF token and a same-origin `Origin`; a token in the `Authorization` header needs none.
 * @module
 */
import type { Context } from 'hono'
import { deleteCookie, getCookie, setCookie } from 'hono/cookie'
import type { Logger } from 'pino'
import { ForbiddenError, InvalidArgumentError, UnauthorizedError } from '../../errors.js'
import {
  type AuthStore,
  type StoredApiKey,
  type StoredBrowserSession,
  type StoredUser,
  userOwner,
} from '../../store/index.js'
import { admit } from './admission.js'
import { AuditLog } from './audit.js'
import type { SignInSettings } from './config.js'
import { IdentityCache } from './identity-cache.js'
import { IdentityProvider, type PendingLogin } from './oidc.js'
import { hashSecret, newSecret, ownerOf, sameSecret } from './secrets.js'

export type Identity =
  | { via: 'token'; owner: string; token: string }
  | { via: 'key'; owner: string; user: StoredUser; key: StoredApiKey }
  | { via: 'cookie'; owner: string; user: StoredUser; session: StoredBrowserSession }

/** What the middleware puts on the request's context. */
export interface AuthVariables {
  owner: string | null
  token: string | undefined
  identity: Identity | undefined
}

export { userOwner }

/** last_used_at is written at most this often per key or browser session: a read per request, not a write. */
const TOUCH_MS = 60_000
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])
/** How long the provider's sign-in page may take. */
const LOGIN_MS = 10 * 60_000

export interface SignInOptions {
  settings: SignInSettings
  store: AuthStore
  /** ANALYST_TOKEN: they keep working beside users. */
  tokens: string[]
  logger?: Logger
}

type FoundKey = { key: StoredApiKey; user: StoredUser }
type FoundSession = { session: StoredBrowserSession; user: StoredUser }

export class SignIn {
  readonly settings: SignInSettings
  readonly store: AuthStore
  readonly provider: IdentityProvider
  readonly audit: AuditLog
  readonly #tokens: string[]
  /** `__Host-` behind TLS: the browser then keeps the cookie to this origin, Secure, at path /. */
  readonly cookieName: string
  readonly loginCookieName: string
  readonly #secure: boolean
  readonly #origin: string
  readonly #clock: () => number
  readonly #keys: IdentityCache<FoundKey & { userId: string; keyId: string }>
  readonly #sessions: IdentityCache<FoundSession & { userId: string }>

  constructor(options: SignInOptions) {
    this.settings = options.settings
    this.store = options.store
    this.#tokens = options.tokens
    this.provider = new IdentityProvider(options.settings)
    this.audit = new AuditLog(options.store, options.logger)
    const url = new URL(options.settings.publicUrl)
    this.#origin = url.origin
    this.#secure = url.protocol === 'https:'
    this.cookieName = this.#secure ? '__Host-analyst_session' : 'analyst_session'
    this.loginCookieName = this.#secure ? '__Host-analyst_login' : 'analyst_login'
    this.#clock = options.settings.clock ?? Date.now
    const cache = {
      changes: options.store.changes,
      clock: this.#clock,
      ...(options.settings.cacheTtlMs === undefined ? {} : { ttlMs: options.settings.cacheTtlMs }),
    }
    this.#keys = new IdentityCache(cache)
    this.#sessions = new IdentityCache(cache)
    if (!options.store.changes.live)
      options.logger?.warn(
        "the store's sign-in changes cannot be heard (yet): keys and cookies are read from the store at every request until they can",
      )
  }

  /** Stops listening to the store's changes. */
  close(): void {
    this.#keys.unsubscribe()
    this.#sessions.unsubscribe()
  }

  // ------------------------------------------------------------------ who is calling

  /** An ANALYST_TOKEN token or a live API key of an enabled user; undefined otherwise. */
  async bearer(secret: string): Promise<Identity | undefined> {
    const token = this.#tokens.find((t) => sameSecret(secret, t))
    if (token) return { via: 'token', owner: ownerOf(token), token }
    if (!secret.startsWith('ak_')) return undefined
    const hash = hashSecret(secret)
    const now = this.#clock()
    const expired = (key: StoredApiKey) => key.expiresAt !== undefined && Date.parse(key.expiresAt) <= now
    let found: FoundKey | undefined = this.#keys.get(hash)
    if (!found || expired(found.key)) {
      const generation = this.#keys.generation
      found = await this.store.findApiKey(hash)
      if (!found || found.user.disabled || expired(found.key)) {
        this.#keys.delete(hash)
        return undefined
      }
      const entry = { ...found, userId: found.user.id, keyId: found.key.id }
      this.#keys.put(hash, entry, generation)
      found = entry
    }
    if (!found.key.lastUsedAt || now - Date.parse(found.key.lastUsedAt) > TOUCH_MS) {
      const at = new Date(now).toISOString()
      await this.store.touchApiKey(found.key.id, at)
      found.key = { ...found.key, lastUsedAt: at }
    }
    return { via: 'key', owner: userOwner(found.user.id), user: found.user, key: found.key }
  }

  /** The browser session of a cookie, unless it expired (idle or absolutely) or its user is disabled. */
  async cookie(secret: string): Promise<Identity | undefined> {
    const hash = hashSecret(secret)
    const now = this.#clock()
    const ended = (session: StoredBrowserSession) =>
      Date.parse(session.expiresAt) <= now || now - Date.parse(session.lastUsedAt) > this.settings.idleMs
    let found: FoundSession | undefined = this.#sessions.get(hash)
    // A copy that looks idle asks the store: another replica may have seen the browser since.
    if (!found || ended(found.session)) {
      const generation = this.#sessions.generation
      found = await this.store.getBrowserSession(hash)
      if (!found || found.user.disabled) return undefined
      if (ended(found.session)) {
        await this.store.deleteBrowserSession(hash)
        return undefined
      }
      const entry = { ...found, userId: found.user.id }
      this.#sessions.put(hash, entry, generation)
      found = entry
    }
    if (now - Date.parse(found.session.lastUsedAt) > TOUCH_MS) {
      const at = new Date(now).toISOString()
      await this.store.touchBrowserSession(hash, at)
      found.session = { ...found.session, lastUsedAt: at }
    }
    return { via: 'cookie', owner: userOwner(found.user.id), user: found.user, session: found.session }
  }

  /**
   * The middleware of every authorized route: sets `owner`, `token` and `identity`, or refuses
   * with 401 (nobody, or a secret that is no longer good) or 403 (a cookie without CSRF proof).
   */
  authorize = async <E extends { Variables: AuthVariables }>(
    request: Context<E>,
    next: () => Promise<void>,
  ): Promise<void> => {
    const c = request as unknown as Context<{ Variables: AuthVariables }>
    const given = bearerOf(c)
    let identity: Identity | undefined
    if (given) {
      identity = await this.bearer(given)
      if (!identity) {
        c.header('www-authenticate', 'Bearer realm="analyst", error="invalid_token"')
        throw new UnauthorizedError(
          'The token or API key is not valid (revoked, expired, or its user disabled)',
          {
            hint: 'Make a new API key in the web UI (API keys), or sign in again.',
          },
        )
      }
    } else {
      const cookie = getCookie(c, this.cookieName)
      const signedIn = cookie ? await this.cookie(cookie) : undefined
      if (signedIn?.via !== 'cookie') {
        if (cookie) deleteCookie(c, this.cookieName, { path: '/', secure: this.#secure })
        c.header('www-authenticate', 'Bearer realm="analyst"')
        // Where a browser signs in: the web UI follows it (a server with tokens only has none).
        c.header('link', '</auth/login>; rel="login"')
        throw new UnauthorizedError(cookie ? 'Your sign-in has ended' : 'Sign-in is required', {
          fix: { setting: 'signIn' },
          hint: 'Scripts send Authorization: Bearer <API key>.',
        })
      }
      if (!SAFE_METHODS.has(c.req.method)) this.checkCsrf(c, signedIn.session)
      identity = signedIn
    }
    c.set('identity', identity)
    c.set('owner', identity.owner)
    c.set('token', identity.via === 'token' ? identity.token : undefined)
    return next()
  }

  /** A state-changing request that a cookie authorizes: this server's own page, with the CSRF token. */
  private checkCsrf(c: Context, session: StoredBrowserSession) {
    const origin = c.req.header('origin')
    const site = c.req.header('sec-fetch-site')
    if ((origin && origin !== this.#origin) || (site && site !== 'same-origin'))
      throw new ForbiddenError(`A request from another site (${origin ?? site}) cannot use your sign-in`)
    if (!sameSecret(c.req.header('x-csrf-token'), session.csrfToken))
      throw new ForbiddenError('The X-CSRF-Token header is missing or wrong', {
        fix: { setting: 'csrfToken' },
      })
  }

  // ------------------------------------------------------------------ signing in and out

  /** Starts a sign-in: the provider's URL to send the browser to, and the cookie that ties it to it. */
  async startLogin(c: Context, next: string): Promise<string> {
    const { url, pending } = await this.provider.start(next)
    const secret = newSecret()
    await this.store.putLoginAttempt(
      hashSecret(secret),
      { ...pending },
      new Date(Date.now() + LOGIN_MS).toISOString(),
    )
    setCookie(c, this.loginCookieName, secret, {
      path: '/',
      httpOnly: true,
      secure: this.#secure,
      // Lax: sent on the provider's top-level redirect back to the callback.
      sameSite: 'Lax',
      maxAge: LOGIN_MS / 1000,
    })
    return url
  }

  /**
   * The provider sent the browser back: the attempt this browser started (once only), the answer
   * checked by openid-client, the user admitted; a new browser session (any old one ends). Returns
   * the path to go to.
   */
  async finishLogin(c: Context): Promise<string> {
    const secret = getCookie(c, this.loginCookieName)
    deleteCookie(c, this.loginCookieName, { path: '/', secure: this.#secure })
    const pending = secret ? await this.store.takeLoginAttempt(hashSecret(secret)) : undefined
    if (!pending) {
      await this.audit.record({
        action: 'sign-in-refused',
        detail: { reason: 'unknown or used sign-in attempt' },
      })
      throw new InvalidArgumentError(
        'This sign-in was not started in this browser, took too long, or was already used',
        {
          fix: { setting: 'signIn' },
        },
      )
    }
    const query = new URL(c.req.url).search
    const claims = await this.provider
      .finish(query, pending as unknown as PendingLogin)
      .catch(async (error: unknown) => {
        await this.audit.record({ action: 'sign-in-refused', detail: { reason: (error as Error).message } })
        throw error
      })
    const admission = admit(claims, this.settings)
    if (!admission.allowed) {
      await this.audit.record({
        action: 'sign-in-refused',
        detail: { subject: claims.subject, email: claims.email, reason: admission.reason },
      })
      throw new ForbiddenError(
        `${claims.email ?? claims.name} may not use this Analyst: ${admission.reason}`,
        {
          hint: 'Ask an administrator to add you to a group that may use it.',
        },
      )
    }
    const user = await this.store.upsertUser({
      issuer: claims.issuer,
      subject: claims.subject,
      name: claims.name,
      ...(claims.email ? { email: claims.email } : {}),
      groups: claims.groups,
      admin: admission.admin,
    })
    if (user.disabled) {
      await this.audit.record({ action: 'sign-in-refused', actor: user.id, detail: { reason: 'disabled' } })
      throw new ForbiddenError('Your account is disabled here', {
        hint: 'Ask an administrator to enable it.',
      })
    }
    // Rotated at sign-in: a cookie planted before it (session fixation) is worth nothing after.
    const old = getCookie(c, this.cookieName)
    if (old) await this.store.deleteBrowserSession(hashSecret(old))
    const session = newSecret()
    await this.store.createBrowserSession({
      hash: hashSecret(session),
      userId: user.id,
      csrfToken: newSecret(),
      ...(claims.idToken ? { idToken: claims.idToken } : {}),
      expiresAt: new Date(this.#clock() + this.settings.maxAgeMs).toISOString(),
    })
    setCookie(c, this.cookieName, session, {
      path: '/',
      httpOnly: true,
      secure: this.#secure,
      sameSite: 'Lax',
      maxAge: Math.floor(this.settings.maxAgeMs / 1000),
    })
    await this.audit.record({ action: 'sign-in', actor: user.id, detail: { admin: user.admin } })
    return safeNext(pending.next)
  }

  /** Ends the browser session; the provider's logout URL to go to next, where it has one. */
  async logout(c: Context, session: StoredBrowserSession): Promise<string> {
    await this.store.deleteBrowserSession(session.hash)
    deleteCookie(c, this.cookieName, { path: '/', secure: this.#secure })
    await this.audit.record({ action: 'sign-out', actor: session.userId })
    return (await this.provider.logoutUrl(session.idToken, `${this.settings.publicUrl}/`)) ?? '/'
  }

  // ------------------------------------------------------------------ API keys

  /** A new key: its secret is in the answer, once; the store keeps its hash. */
  async createKey(user: StoredUser, label: string, expiresInDays?: number) {
    const secret = newSecret('ak_')
    const expiresAt =
      expiresInDays === undefined
        ? undefined
        : new Date(this.#clock() + expiresInDays * 86_400_000).toISOString()
    const key = await this.store.createApiKey({
      userId: user.id,
      label,
      hash: hashSecret(secret),
      ...(expiresAt ? { expiresAt } : {}),
    })
    await this.audit.record({ action: 'key-created', actor: user.id, target: key.id, detail: { label } })
    return { id: key.id, key: secret, label, expiresAt: key.expiresAt ?? null }
  }
}

/** The secret a request carries: `Authorization: Bearer`, or `?token=` on a GET (downloads, <img>). */
export function bearerOf(c: Context): string | undefined {
  const header = c.req.header('authorization')
  if (header?.startsWith('Bearer ')) return header.slice(7).trim()
  return c.req.method === 'GET' ? c.req.query('token') : undefined
}

/** A path of this server only (`/x`, not `//host` or `/\host`): no open redirect. */
export function safeNext(next: string | undefined): string {
  if (!next?.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return '/'
  try {
    const url = new URL(next, 'http://analyst.invalid')
    return url.origin === 'http://analyst.invalid' ? `${url.pathname}${url.search}${url.hash}` : '/'
  } catch {
    return '/'
  }
}
