/**
 * The signed-in user behind a request, as sessions and sources judge them (their groups and email
 * say which named sources they may use); undefined for an ANALYST_TOKEN token or nobody.
 * @module
 */
import type { Identity } from './signin.js'

export function callingUser(
  identity: Identity | undefined,
): { groups: string[]; email?: string } | undefined {
  if (!identity || identity.via === 'token') return undefined
  const { groups, email } = identity.user
  return { groups, ...(email ? { email } : {}) }
}
