/**
 * Sign-in's routes: /auth/login, /auth/callback and /auth/logout for browsers; /api/me, the
 * caller's API keys, and the admin API. Mounted by createApp after its /api/* middleware (which
 * is `SignIn.authorize` when sign-in is on), so every /api route here has an identity.
 * @module
 */
import { type Context, Hono } from 'hono'
import { z } from 'zod'
import { ConflictError, ForbiddenError, InvalidArgumentError, NotFoundError } from '../../errors.js'
import type { HistoryStore, StoredUser } from '../../store/index.js'
import { jsonBody, parse } from '../request-body.js'
import { sessionSummary } from '../views.js'
import { type AuthVariables, type SignIn, safeNext, userOwner } from './signin.js'

export type AuthEnv = { Variables: AuthVariables }

const NewKey = z
  .object({
    label: z.string().trim().min(1, 'the label is empty').max(100),
    expiresInDays: z.number().int().min(1).max(3650).optional(),
  })
  .strict()

const Assign = z.object({ userId: z.string().trim().min(1, 'the userId is empty').max(100) }).strict()

/** A session a user owns (`user:<id>`); the others are a token's (its hash) or nobody's (null). */
const isUsers = (owner: string | null) => owner?.startsWith('user:') ?? false

/** The signed-in user (a browser or an API key); a token of ANALYST_TOKEN is no user. */
export function userOf(c: Context<AuthEnv>): StoredUser {
  const identity = c.get('identity')
  if (identity?.via === 'cookie' || identity?.via === 'key') return identity.user
  throw new ForbiddenError('This needs a signed-in user: an ANALYST_TOKEN token is not one', {
    fix: { setting: 'signIn' },
  })
}

function adminOf(c: Context<AuthEnv>): StoredUser {
  const user = userOf(c)
  if (!user.admin) throw new ForbiddenError('This is for administrators (ANALYST_OIDC_ADMIN_GROUPS)')
  return user
}

/** What the API shows of a user. */
export function userView(user: StoredUser) {
  return {
    id: user.id,
    name: user.name,
    email: user.email ?? null,
    groups: user.groups,
    admin: user.admin,
    disabled: user.disabled,
    createdAt: user.createdAt,
    lastSeenAt: user.lastSeenAt ?? null,
  }
}

/** A user's quotas as the admin page shows them (the server's Quotas, by owner or email). */
export type QuotasOf = (owner: string, email?: string) => Record<string, number | undefined>

export function signInRoutes(signin: SignIn, history: HistoryStore, quotasOf?: QuotasOf): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>()

  app.get('/auth/login', async (c) =>
    c.redirect(await signin.startLogin(c, safeNext(c.req.query('next'))), 302),
  )

  app.get('/auth/callback', async (c) => {
    const refused = c.req.query('error')
    if (refused) {
      await signin.audit.record({ action: 'sign-in-refused', detail: { reason: refused } })
      throw new ForbiddenError(
        `The identity provider did not sign you in: ${c.req.query('error_description') ?? refused}`,
        {
          fix: { setting: 'signIn' },
        },
      )
    }
    return c.redirect(await signin.finishLogin(c), 302)
  })

  app.post('/auth/logout', signin.authorize, async (c) => {
    const identity = c.get('identity')
    if (identity?.via !== 'cookie')
      throw new InvalidArgumentError('Only a signed-in browser signs out; revoke an API key instead')
    return c.json({ redirect: await signin.logout(c, identity.session) })
  })

  app.get('/api/me', (c) => {
    const identity = c.get('identity')
    if (identity?.via !== 'cookie' && identity?.via !== 'key') {
      c.header('www-authenticate', 'Bearer realm="analyst"')
      return c.json({ error: { code: 'unauthorized', message: 'Nobody is signed in' } }, 401)
    }
    const { id, name, email, groups, admin } = identity.user
    return c.json({
      user: { id, name, email: email ?? null, groups, admin },
      csrfToken: identity.via === 'cookie' ? identity.session.csrfToken : null,
    })
  })

  // ------------------------------------------------------------------ API keys

  app.post('/api/keys', async (c) => {
    const user = userOf(c)
    const body = parse(NewKey, await jsonBody(c))
    return c.json(await signin.createKey(user, body.label, body.expiresInDays), 201)
  })

  app.get('/api/keys', async (c) => {
    const keys = await signin.store.listApiKeys(userOf(c).id)
    return c.json(
      keys.map((key) => ({
        id: key.id,
        label: key.label,
        createdAt: key.createdAt,
        lastUsedAt: key.lastUsedAt ?? null,
        expiresAt: key.expiresAt ?? null,
      })),
    )
  })

  app.delete('/api/keys/:id', async (c) => {
    const user = userOf(c)
    const id = c.req.param('id')
    if (!(await signin.store.revokeApiKey(user.id, id))) throw new NotFoundError(`No API key ${id}`)
    await signin.audit.record({ action: 'key-revoked', actor: user.id, target: id })
    return c.body(null, 204)
  })

  // ------------------------------------------------------------------ admin

  app.get('/api/admin/users', async (c) => {
    adminOf(c)
    const users = await signin.store.listUsers()
    const withUsage = await Promise.all(
      users.map(async (user) => {
        const owner = userOwner(user.id)
        const [usage, activity] = await Promise.all([history.ownerUsage(owner), history.ownerActivity(owner)])
        return { ...userView(user), usage, activity, quotas: quotasOf?.(owner, user.email) ?? {} }
      }),
    )
    return c.json(withUsage)
  })

  for (const action of ['disable', 'enable'] as const) {
    app.post(`/api/admin/users/:id/${action}`, async (c) => {
      const admin = adminOf(c)
      const id = c.req.param('id') as string
      if (action === 'disable' && id === admin.id)
        throw new InvalidArgumentError('An administrator cannot disable themselves')
      if (!(await signin.store.setUserDisabled(id, action === 'disable')))
        throw new NotFoundError(`No user ${id}`)
      await signin.audit.record({ action: `user-${action}d`, actor: admin.id, target: id })
      return c.json(userView((await signin.store.getUser(id)) as StoredUser))
    })
  }

  // A user's sessions as the admin page lists them (titles, questions, dates): who uses what. Their
  // content stays the user's own (/api/sessions/:id is a 404 to an admin too).
  app.get('/api/admin/users/:id/sessions', async (c) => {
    adminOf(c)
    const id = c.req.param('id') as string
    if (!(await signin.store.getUser(id))) throw new NotFoundError(`No user ${id}`)
    return c.json((await history.listSessions({ owner: userOwner(id) })).map(sessionSummary))
  })

  // Sessions made before sign-in, with ANALYST_TOKEN tokens (or with none, on loopback): an admin
  // gives each to the user it belongs to. A user's own session is never moved to another.
  app.get('/api/admin/sessions', async (c) => {
    adminOf(c)
    const sessions = await history.listSessions()
    return c.json(
      sessions
        .filter((session) => !isUsers(session.owner))
        .map(({ id, title, owner, createdAt, updatedAt, questions }) => ({
          id,
          title,
          owner: owner === null ? null : { token: owner },
          createdAt,
          updatedAt,
          questions,
        })),
    )
  })

  app.post('/api/admin/sessions/:id/assign', async (c) => {
    const admin = adminOf(c)
    const id = c.req.param('id') as string
    const { userId } = parse(Assign, await jsonBody(c))
    const user = await signin.store.getUser(userId)
    if (!user) throw new NotFoundError(`No user ${userId}`, { hint: 'GET /api/admin/users lists their ids.' })
    const session = await history.getSession(id)
    if (!session) throw new NotFoundError(`No session ${id}`)
    const to = userOwner(user.id)
    if (session.owner !== to) {
      if (isUsers(session.owner))
        throw new ConflictError(`Session ${id} belongs to a user already`, {
          hint: 'Only sessions of an ANALYST_TOKEN token (GET /api/admin/sessions) are assigned.',
        })
      if (!(await history.changeSessionOwner(id, session.owner, to)))
        throw new ConflictError(`Session ${id} changed owner meanwhile`, { hint: 'Look again and retry.' })
      await signin.audit.record({
        action: 'session-assigned',
        actor: admin.id,
        target: id,
        detail: { userId: user.id, from: session.owner === null ? null : { token: session.owner } },
      })
    }
    return c.json({ id, userId: user.id })
  })

  app.get('/api/admin/audit', async (c) => {
    adminOf(c)
    const limit = Math.min(Math.max(Number(c.req.query('limit') ?? 200) || 200, 1), 1000)
    const actor = c.req.query('actor')
    return c.json(await signin.store.audit({ limit, ...(actor ? { actor } : {}) }))
  })

  return app
}
