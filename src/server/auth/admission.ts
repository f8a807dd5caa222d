/**
 * Who may enter, from what the identity provider says of them: a member of one of the allowed
 * groups, with an email in one of the allowed domains (each rule only when it is set); an admin
 * is a member of one of the admin groups.
 * @module
 */
import type { SignInSettings } from './config.js'
import type { SignedInClaims } from './oidc.js'

export type Admission = { allowed: true; admin: boolean } | { allowed: false; reason: string }

export function admit(
  claims: SignedInClaims,
  settings: Pick<SignInSettings, 'allowedGroups' | 'allowedDomains' | 'adminGroups'>,
): Admission {
  const member = (groups: string[]) => groups.some((group) => claims.groups.includes(group))
  if (settings.allowedGroups.length > 0 && !member(settings.allowedGroups))
    return { allowed: false, reason: 'not in an allowed group' }
  if (settings.allowedDomains.length > 0) {
    const domain = claims.email?.split('@').at(-1)?.toLowerCase()
    // An address the provider says it has not verified proves no domain.
    if (!domain || claims.emailVerified === false || !settings.allowedDomains.includes(domain))
      return { allowed: false, reason: 'no verified email in an allowed domain' }
  }
  return { allowed: true, admin: member(settings.adminGroups) }
}
