/**
 * The identity provider, through openid-client: discovery (once, retried after a failure), the
 * authorization code flow with PKCE, `state` and `nonce`, the ID token's issuer, audience, expiry
 * and nonce, userinfo for the groups a provider leaves out of the ID token, and RP-initiated
 * logout. No JWT is checked here. openid-client does not check the ID token's signature: it comes
 * straight from the provider's token endpoint over TLS (https is required off loopback), which
 * OpenID Connect Core 3.1.3.7 takes as proof of its issuer; so the provider rotating its signing
 * keys never stops a sign-in.
 * @module
 */
import * as client from 'openid-client'
import { UnauthorizedError } from '../../errors.js'
import type { SignInSettings } from './config.js'

/** What a sign-in under way keeps until the provider sends the browser back. */
export interface PendingLogin {
  state: string
  nonce: string
  verifier: string
  /** A path of this server to go to after sign-in. */
  next: string
}

/** Who the provider says signed in. */
export interface SignedInClaims {
  issuer: string
  subject: string
  name: string
  email?: string
  emailVerified?: boolean
  groups: string[]
  idToken?: string
}

/** An error's message with its causes' (openid-client says "invalid response", its cause says why). */
function reasons(error: unknown): string {
  const parts: string[] = []
  for (let e = error; e instanceof Error && parts.length < 4; e = e.cause) parts.push(e.message)
  return parts.join(': ')
}

const LOOPBACK_HTTP = /^http:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?(\/|$)/

export class IdentityProvider {
  #config: Promise<client.Configuration> | undefined

  constructor(private readonly settings: SignInSettings) {}

  get redirectUri(): string {
    return `${this.settings.publicUrl}/auth/callback`
  }

  /** Discovered once; a failure is retried at the next sign-in (the provider may be back). */
  private config(): Promise<client.Configuration> {
    const { issuer, clientId, clientSecret } = this.settings
    this.#config ??= client
      .discovery(
        new URL(issuer),
        clientId,
        { redirect_uris: [this.redirectUri], response_types: ['code'] },
        clientSecret ? client.ClientSecretBasic(clientSecret) : client.None(),
        // Plain http only to a provider on this machine (development, tests).
        LOOPBACK_HTTP.test(issuer) ? { execute: [client.allowInsecureRequests] } : {},
      )
      .catch((error: unknown) => {
        this.#config = undefined
        throw new UnauthorizedError(
          `Cannot reach the identity provider at ${issuer}: ${(error as Error).message}`,
          {
            hint: 'Try again in a moment; if it goes on, check ANALYST_OIDC_ISSUER where analyst serve runs.',
            cause: error,
          },
        )
      })
    return this.#config
  }

  /** Where to send the browser to sign in, and what to keep for the callback. */
  async start(next: string): Promise<{ url: string; pending: PendingLogin }> {
    const config = await this.config()
    const verifier = client.randomPKCECodeVerifier()
    const pending = { state: client.randomState(), nonce: client.randomNonce(), verifier, next }
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri,
      scope: this.settings.scopes,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
    })
    return { url: url.href, pending }
  }

  /**
   * The provider's answer at the callback (`query`: its query string), checked against what
   * `start` kept: the state, the code exchanged with the PKCE verifier, the ID token verified.
   */
  async finish(query: string, pending: PendingLogin): Promise<SignedInClaims> {
    const config = await this.config()
    const tokens = await client
      .authorizationCodeGrant(config, new URL(`${this.redirectUri}${query}`), {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      })
      .catch((error: unknown) => {
        throw new UnauthorizedError(`The identity provider's answer was refused: ${reasons(error)}`, {
          fix: { setting: 'signIn' },
          cause: error,
        })
      })
    const claims = tokens.claims()
    if (!claims)
      throw new UnauthorizedError('The identity provider sent no ID token', { fix: { setting: 'signIn' } })
    let profile: Record<string, unknown> = claims
    // Many providers (Keycloak without a mapper, Authentik, Dex's scopes) give groups at userinfo only.
    if (!(this.settings.groupsClaim in claims) && config.serverMetadata().userinfo_endpoint) {
      const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub).catch(() => undefined)
      if (info) profile = { ...info, ...claims }
    }
    const groups = profile[this.settings.groupsClaim]
    const email = typeof profile.email === 'string' ? profile.email : undefined
    return {
      issuer: claims.iss,
      subject: claims.sub,
      name: String(profile.name ?? profile.preferred_username ?? email ?? claims.sub),
      ...(email ? { email } : {}),
      ...(typeof profile.email_verified === 'boolean' ? { emailVerified: profile.email_verified } : {}),
      groups: Array.isArray(groups) ? groups.map(String) : typeof groups === 'string' ? [groups] : [],
      ...(tokens.id_token ? { idToken: tokens.id_token } : {}),
    }
  }

  /** The provider's end-session URL (RP-initiated logout), when it has one. */
  async logoutUrl(idToken: string | undefined, returnTo: string): Promise<string | undefined> {
    const config = await this.config().catch(() => undefined)
    if (!config?.serverMetadata().end_session_endpoint) return undefined
    return client.buildEndSessionUrl(config, {
      post_logout_redirect_uri: returnTo,
      ...(idToken ? { id_token_hint: idToken } : {}),
    }).href
  }
}
