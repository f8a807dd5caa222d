/**
 * Sign-in as the browser sees it: who is signed in (GET /api/me, which a server without sign-in
 * does not have), signing out, API keys, shares, and the admin API.
 * @module
 */
import type { SessionSummary, SharedSessionView } from '../server/types.js'
import { apiUrl, json, jsonInit, send } from './api.js'

export interface Me {
  user: { id: string; name: string; email: string | null; groups: string[]; admin: boolean }
  csrfToken: string | null
}

export interface ApiKeyView {
  id: string
  label: string
  createdAt: string
  lastUsedAt: string | null
  expiresAt: string | null
}

export interface UserView {
  id: string
  name: string
  email: string | null
  groups: string[]
  admin: boolean
  disabled: boolean
  lastSeenAt: string | null
  usage: { sessions: number; runningRuns: number; dataBytes: number }
  activity: {
    runs: number
    tokens: {
      model: string | null
      runs: number
      inputTokens: number
      outputTokens: number
      totalTokens: number
    }[]
  }
  /** The quotas that apply to them (none set: empty). */
  quotas: { concurrentRuns?: number; sessions?: number; uploadBytes?: number; requestsPerMinute?: number }
}

/** A session no user owns (an ANALYST_TOKEN token's, or nobody's): GET /api/admin/sessions. */
export interface UnownedSessionView {
  id: string
  title: string
  /** The token's owner id (a hash, never the token); null: made with no token (loopback). */
  owner: { token: string } | null
  createdAt: string
  updatedAt: string
  questions: number
}

/** `none`: the server has no sign-in (tokens, or nothing on loopback); `out`: nobody is signed in. */
export type SignInState = { kind: 'none' } | { kind: 'out' } | { kind: 'in'; me: Me }

export async function signInState(): Promise<SignInState> {
  const response = await fetch(apiUrl('/api/me'))
  if (response.status === 404) return { kind: 'none' }
  // A 401 that names a sign-in page: this server signs users in (else it wants a token).
  if (response.status === 401)
    return response.headers.get('link')?.includes('rel="login"') ? { kind: 'out' } : { kind: 'none' }
  if (!response.ok) return { kind: 'none' }
  return { kind: 'in', me: (await response.json()) as Me }
}

/** The sign-in page, coming back to where the browser is now. */
export function signInUrl(): string {
  return apiUrl(`/auth/login?next=${encodeURIComponent(location.pathname + location.search + location.hash)}`)
}

export const account = {
  /** Ends the sign-in; resolves to where to go (the provider's logout, or this server's page). */
  signOut: async () => (await json<{ redirect: string }>('/auth/logout', jsonInit('POST'))).redirect,
  keys: () => json<ApiKeyView[]>('/api/keys'),
  createKey: (label: string, expiresInDays?: number) =>
    json<{ id: string; key: string; label: string; expiresAt: string | null }>(
      '/api/keys',
      jsonInit('POST', { label, ...(expiresInDays ? { expiresInDays } : {}) }),
    ),
  revokeKey: async (id: string) => {
    await send(`/api/keys/${encodeURIComponent(id)}`, { method: 'DELETE' })
  },
  share: (sessionId: string, allowFiles: boolean) =>
    json<{ id: string; url: string }>(
      `/api/sessions/${encodeURIComponent(sessionId)}/share`,
      jsonInit('POST', { allowFiles }),
    ),
  unshare: async (sessionId: string) => {
    await send(`/api/sessions/${encodeURIComponent(sessionId)}/share`, { method: 'DELETE' })
  },
  shared: (shareId: string) => json<SharedSessionView>(`/api/shared/${encodeURIComponent(shareId)}`),
  fork: (shareId: string) =>
    json<{ id: string }>(`/api/shared/${encodeURIComponent(shareId)}/fork`, jsonInit('POST')),
  users: () => json<UserView[]>('/api/admin/users'),
  setDisabled: (id: string, disabled: boolean) =>
    json<UserView>(
      `/api/admin/users/${encodeURIComponent(id)}/${disabled ? 'disable' : 'enable'}`,
      jsonInit('POST'),
    ),
  sessionsOf: (userId: string) =>
    json<SessionSummary[]>(`/api/admin/users/${encodeURIComponent(userId)}/sessions`),
  unownedSessions: () => json<UnownedSessionView[]>('/api/admin/sessions'),
  assign: (sessionId: string, userId: string) =>
    json<{ id: string; userId: string }>(
      `/api/admin/sessions/${encodeURIComponent(sessionId)}/assign`,
      jsonInit('POST', { userId }),
    ),
}
