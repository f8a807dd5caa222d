/**
 * Secrets that Analyst hands out (cookies, API keys, CSRF tokens): 256 random bits, kept in the
 * store only as their SHA-256, and compared in constant time.
 * @module
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** A new secret, URL- and header-safe; `prefix` tells a reader what it is (`ak_` for API keys). */
export function newSecret(prefix = ''): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`
}

/** What the store keeps of a secret. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

export function sameSecret(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** A session belongs to the ANALYST_TOKEN token that made it: stored as a hash, never the token itself. */
export function ownerOf(token: string): string {
  return createHash('sha256').update(token).digest('hex').slice(0, 32)
}
