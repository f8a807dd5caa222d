import { describe, expect, it } from 'vitest'
import { admit } from './admission.js'
import type { SignedInClaims } from './oidc.js'

const claims = (extra: Partial<SignedInClaims>): SignedInClaims => ({
  issuer: 'https://id.example.com',
  subject: 's',
  name: 'N',
  groups: [],
  ...extra,
})
const rules = (extra: { allowedGroups?: string[]; allowedDomains?: string[]; adminGroups?: string[] }) => ({
  allowedGroups: [],
  allowedDomains: [],
  adminGroups: [],
  ...extra,
})

describe('admit', () => {
  it('lets anyone in with no rule set; an admin is a member of an admin group', () => {
    expect(admit(claims({}), rules({}))).toEqual({ allowed: true, admin: false })
    expect(admit(claims({ groups: ['ops'] }), rules({ adminGroups: ['ops'] }))).toEqual({
      allowed: true,
      admin: true,
    })
  })

  it('lets in only verified emails of an allowed domain, in any case', () => {
    const domains = rules({ allowedDomains: ['example.com'] })
    expect(admit(claims({ email: 'Ann@EXAMPLE.com', emailVerified: true }), domains).allowed).toBe(true)
    // A provider that says nothing of verification is taken at its word (Entra ID sends no such claim).
    expect(admit(claims({ email: 'ann@example.com' }), domains).allowed).toBe(true)
    for (const refused of [
      claims({ email: 'ann@example.com', emailVerified: false }),
      claims({ email: 'ann@example.com.evil.org', emailVerified: true }),
      claims({ email: 'ann@sub.example.com', emailVerified: true }),
      claims({}),
    ])
      expect(admit(refused, domains)).toEqual({
        allowed: false,
        reason: 'no verified email in an allowed domain',
      })
  })

  it('needs both rules when both are set', () => {
    const both = rules({ allowedGroups: ['analysts'], allowedDomains: ['example.com'] })
    const ann = { email: 'ann@example.com', emailVerified: true }
    expect(admit(claims({ ...ann, groups: ['analysts'] }), both).allowed).toBe(true)
    expect(admit(claims({ ...ann, groups: ['sales'] }), both)).toEqual({
      allowed: false,
      reason: 'not in an allowed group',
    })
    expect(admit(claims({ email: 'ann@other.org', groups: ['analysts'] }), both).allowed).toBe(false)
  })
})
