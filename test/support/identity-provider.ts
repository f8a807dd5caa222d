/**
 * A real OpenID Connect provider for tests: `oidc-provider` (OpenID Certified) on 127.0.0.1 at a
 * free port, with the users and groups a test gives, one confidential client, its development
 * login form (any password), and no consent step (a grant is made at once). `signIn` walks an
 * HTTP client through the whole authorization code flow, as a browser would, with a cookie jar.
 */
import { generateKeyPairSync } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import Provider from 'oidc-provider'
import { type SignInSettings, signInSettingsFromEnv } from '../../src/server/auth/index.js'
import { freePort } from '../../src/test/support/ports.js'

export interface TestUser {
  name: string
  email: string
  groups: string[]
}

export interface IdentityProviderOptions {
  users: Record<string, TestUser>
  clientId?: string
  clientSecret?: string
  /** The redirect URIs of the client (the app's /auth/callback). */
  redirectUris: string[]
  postLogoutRedirectUris?: string[]
}

export interface RunningIdentityProvider {
  issuer: string
  clientId: string
  clientSecret: string
  /** Signs with a new key from now on (the old ones still published); returns the new key's id. */
  rotateKeys(): string
  stop(): Promise<void>
}

let keysMade = 0
function signingKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  return {
    ...(privateKey.export({ format: 'jwk' }) as Record<string, unknown>),
    kid: `k-${Date.now()}-${++keysMade}`,
    use: 'sig',
    alg: 'RS256',
  }
}

export async function startIdentityProvider(
  options: IdentityProviderOptions,
): Promise<RunningIdentityProvider> {
  const port = await freePort()
  const issuer = `http://127.0.0.1:${port}`
  const clientId = options.clientId ?? 'analyst'
  const clientSecret = options.clientSecret ?? 'analyst-test-secret-that-is-long-enough'
  // A provider made again with new keys answers from then on (rotateKeys): the same issuer, port
  // and users, its signing key new and the old one still published, as providers rotate.
  let keys = [signingKey()]
  const make = () =>
    new Provider(issuer, {
      clients: [
        {
          client_id: clientId,
          client_secret: clientSecret,
          redirect_uris: options.redirectUris,
          post_logout_redirect_uris: options.postLogoutRedirectUris ?? [],
          grant_types: ['authorization_code'],
          response_types: ['code'],
        },
      ],
      jwks: { keys },
      pkce: { required: () => true },
      claims: {
        openid: ['sub'],
        email: ['email', 'email_verified'],
        profile: ['name'],
        groups: ['groups'],
      },
      features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
      async findAccount(_ctx: unknown, id: string) {
        const user = options.users[id]
        if (!user) return undefined
        return {
          accountId: id,
          async claims() {
            return { sub: id, name: user.name, email: user.email, email_verified: true, groups: user.groups }
          },
        }
      },
      // No consent step: the test users grant whatever the client asks.
      async loadExistingGrant(ctx: {
        oidc: { client: { clientId: string }; session: { accountId: string }; provider: Provider }
      }) {
        const grant = new ctx.oidc.provider.Grant({
          clientId: ctx.oidc.client.clientId,
          accountId: ctx.oidc.session.accountId,
        })
        grant.addOIDCScope('openid email profile groups')
        grant.addOIDCClaims(['email', 'email_verified', 'name', 'groups'])
        await grant.save()
        return grant
      },
    })
  let handle = make().callback()
  const server: Server = createServer((req, res) => handle(req, res))
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  return {
    issuer,
    clientId,
    clientSecret,
    rotateKeys: () => {
      const next = signingKey()
      keys = [next, ...keys]
      handle = make().callback()
      return next.kid
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** Cookies per origin, as a browser keeps them (enough for these servers: no paths or domains). */
export class CookieJar {
  readonly #cookies = new Map<string, Map<string, string>>()

  header(url: string): string {
    const jar = this.#cookies.get(new URL(url).origin)
    return jar ? [...jar].map(([k, v]) => `${k}=${v}`).join('; ') : ''
  }

  store(url: string, response: Response) {
    const origin = new URL(url).origin
    const jar = this.#cookies.get(origin) ?? new Map<string, string>()
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';')
      const index = pair.indexOf('=')
      const name = pair.slice(0, index).trim()
      const value = pair.slice(index + 1).trim()
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === ''
      if (expired) jar.delete(name)
      else jar.set(name, value)
    }
    this.#cookies.set(origin, jar)
  }

  get(url: string, name: string): string | undefined {
    return this.#cookies.get(new URL(url).origin)?.get(name)
  }

  set(url: string, name: string, value: string) {
    const origin = new URL(url).origin
    const jar = this.#cookies.get(origin) ?? new Map<string, string>()
    jar.set(name, value)
    this.#cookies.set(origin, jar)
  }
}

/** One request with the jar's cookies, no redirect followed. */
export async function request(jar: CookieJar, url: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers)
  const cookie = jar.header(url)
  if (cookie) headers.set('cookie', cookie)
  const response = await fetch(url, { ...init, headers, redirect: 'manual' })
  jar.store(url, response)
  return response
}

/**
 * Follows redirects from `url` as a browser would, logging in as `login` at the provider's form;
 * stops at the first answer that is not a redirect or the provider's form, or at `stopAt`
 * (a URL prefix, e.g. the app's callback, to look at it before it is used).
 */
export async function followSignIn(
  jar: CookieJar,
  url: string,
  login: string,
  options: { stopAt?: string } = {},
): Promise<{ url: string; response: Response }> {
  let current = url
  for (let hop = 0; hop < 20; hop++) {
    if (options.stopAt && current.startsWith(options.stopAt))
      return { url: current, response: new Response() }
    const response = await request(jar, current)
    const location = response.headers.get('location')
    if (response.status >= 300 && response.status < 400 && location) {
      current = new URL(location, current).href
      continue
    }
    const html = response.status === 200 ? await response.clone().text() : ''
    const form = html.match(/<form[^>]*action="([^"]+)"[^>]*method="post"/)
    if (form && html.includes('name="prompt" value="login"')) {
      const submitted = await request(jar, new URL(form[1] as string, current).href, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ prompt: 'login', login, password: 'any' }),
      })
      const next = submitted.headers.get('location')
      if (!next) return { url: current, response: submitted }
      current = new URL(next, current).href
      continue
    }
    return { url: current, response }
  }
  throw new Error(`too many redirects from ${url}`)
}

/** What /api/me answers a signed-in user. */
export interface Me {
  user: { id: string; name: string; email: string; groups: string[]; admin: boolean }
  csrfToken: string
}

/** A signed-in browser: its cookie jar and what /api/me said. */
export interface Browser {
  jar: CookieJar
  me: Me
}

/** Signs `login` in at the server `base` through its provider, as a browser would; throws if it fails. */
export async function signIn(base: string, login: string, next = '/'): Promise<Browser> {
  const jar = new CookieJar()
  const { url } = await followSignIn(jar, `${base}/auth/login?next=${encodeURIComponent(next)}`, login)
  if (url !== `${base}${next}`) throw new Error(`signing ${login} in ended at ${url}, not ${base}${next}`)
  const me = await request(jar, `${base}/api/me`)
  if (me.status !== 200) throw new Error(`/api/me answered ${me.status} after signing ${login} in`)
  return { jar, me: (await me.json()) as Me }
}

/** A call as the web UI makes it: the cookie, the CSRF token, the server's own origin. */
export function call(browser: Browser, url: string, method = 'GET', body?: unknown): Promise<Response> {
  return request(browser.jar, url, {
    method,
    headers: {
      origin: new URL(url).origin,
      'x-csrf-token': browser.me.csrfToken,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
}

/**
 * A server's sign-in settings for this provider, as ANALYST_OIDC_* would give them: its issuer and
 * client, the server at `publicUrl`, the groups claim asked for; `extra` adds who may enter.
 */
export function signInSettingsFor(
  idp: RunningIdentityProvider,
  publicUrl: string,
  extra: Record<string, string> = {},
): SignInSettings {
  const settings = signInSettingsFromEnv({
    ANALYST_OIDC_ISSUER: idp.issuer,
    ANALYST_OIDC_CLIENT_ID: idp.clientId,
    ANALYST_OIDC_CLIENT_SECRET: idp.clientSecret,
    ANALYST_PUBLIC_URL: publicUrl,
    ANALYST_OIDC_SCOPES: 'openid email profile groups',
    ...extra,
  })
  if (!settings) throw new Error('no sign-in settings')
  return settings
}
