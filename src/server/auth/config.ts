/**
 * Sign-in's settings, read from `analyst serve`'s environment (ANALYST_OIDC_*, ANALYST_PUBLIC_URL,
 * ANALYST_SESSION_*) and checked once, at start: a mistake is a message that names the variable.
 * @module
 */
import { InvalidArgumentError } from '../../errors.js'

export interface SignInSettings {
  /** The identity provider's issuer URL (its /.well-known/openid-configuration is read). */
  issuer: string
  clientId: string
  /** Absent: a public client (PKCE alone). */
  clientSecret?: string
  /** Where users reach this server; the provider sends them back to `publicUrl + /auth/callback`. */
  publicUrl: string
  /** @default openid email profile */
  scopes: string
  /** The ID token claim (or userinfo field) with the user's groups. @default groups */
  groupsClaim: string
  /** Only members of one of these may enter (empty: any group). */
  allowedGroups: string[]
  /** Only users whose email is in one of these domains may enter (empty: any). */
  allowedDomains: string[]
  /** Members of one of these are admins. */
  adminGroups: string[]
  /** A browser session ends after this long without a request. @default 12 hours */
  idleMs: number
  /** A browser session ends this long after sign-in, whatever its use. @default 7 days */
  maxAgeMs: number
  /**
   * How long a key or cookie, once read from the store, is trusted without another read should no
   * change notice come (revocations, disabled users and sign-outs come at once). @default 60 s
   */
  cacheTtlMs?: number
  /** The time sign-in goes by (tests move it). @default Date.now */
  clock?: () => number
}

const list = (value: string | undefined) =>
  (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/

function url(name: string, value: string): URL {
  try {
    const parsed = new URL(value)
    if (parsed.protocol === 'https:' || (parsed.protocol === 'http:' && LOOPBACK.test(parsed.hostname)))
      return parsed
  } catch {}
  throw new InvalidArgumentError(`${name} is not an https URL: ${value}`, {
    hint: `Set ${name} to an https:// URL (http:// only for 127.0.0.1 or localhost).`,
  })
}

function duration(name: string, value: string | undefined, unitMs: number, fallback: number): number {
  if (value === undefined || value.trim() === '') return fallback
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0)
    throw new InvalidArgumentError(`${name} is not a positive number: ${value}`, {
      hint: `Set ${name} to a number, e.g. ${fallback / unitMs}.`,
    })
  return n * unitMs
}

/** The settings, or undefined when sign-in is not configured (no ANALYST_OIDC_ISSUER). */
export function signInSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): SignInSettings | undefined {
  const issuer = env.ANALYST_OIDC_ISSUER?.trim()
  if (!issuer) return undefined
  const clientId = env.ANALYST_OIDC_CLIENT_ID?.trim()
  const publicUrl = env.ANALYST_PUBLIC_URL?.trim()
  if (!clientId || !publicUrl) {
    const missing = [clientId ? '' : 'ANALYST_OIDC_CLIENT_ID', publicUrl ? '' : 'ANALYST_PUBLIC_URL'].filter(
      Boolean,
    )
    throw new InvalidArgumentError(`Sign-in needs ${missing.join(' and ')} as well as ANALYST_OIDC_ISSUER`, {
      fix: { setting: 'oidc' },
      hint: 'ANALYST_PUBLIC_URL is where users reach this server, e.g. https://analyst.example.com; register ANALYST_PUBLIC_URL/auth/callback as the redirect URI at the provider.',
    })
  }
  url('ANALYST_OIDC_ISSUER', issuer)
  const base = url('ANALYST_PUBLIC_URL', publicUrl)
  return {
    issuer,
    clientId,
    clientSecret: env.ANALYST_OIDC_CLIENT_SECRET?.trim() || undefined,
    publicUrl: base.origin + base.pathname.replace(/\/+$/, ''),
    scopes: env.ANALYST_OIDC_SCOPES?.trim() || 'openid email profile',
    groupsClaim: env.ANALYST_OIDC_GROUPS_CLAIM?.trim() || 'groups',
    allowedGroups: list(env.ANALYST_OIDC_ALLOWED_GROUPS),
    allowedDomains: list(env.ANALYST_OIDC_ALLOWED_DOMAINS).map((domain) =>
      domain.replace(/^@/, '').toLowerCase(),
    ),
    adminGroups: list(env.ANALYST_OIDC_ADMIN_GROUPS),
    idleMs: duration('ANALYST_SESSION_IDLE_HOURS', env.ANALYST_SESSION_IDLE_HOURS, 3_600_000, 12 * 3_600_000),
    maxAgeMs: duration(
      'ANALYST_SESSION_MAX_HOURS',
      env.ANALYST_SESSION_MAX_HOURS,
      3_600_000,
      7 * 24 * 3_600_000,
    ),
  }
}
