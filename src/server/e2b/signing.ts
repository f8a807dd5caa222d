/**
 * envd's signed file URLs (`sandbox.downloadUrl` / `uploadUrl`): `/files?path=…&signature=v1_…`
 * with an optional `signature_expiration`, made from the sandbox's envd access token as
 * envd/internal/api/auth.go makes them. Such a URL names no sandbox when the SDK goes through
 * E2B_SANDBOX_URL: the signature itself says which one it is for.
 * @module
 */
import { createHash } from 'node:crypto'
import { sameSecret } from './registry.js'

export type Operation = 'read' | 'write'

/** The signature envd expects for one path, operation, user and expiry (Unix seconds). */
export function signatureFor(
  token: string,
  request: { path: string; operation: Operation; username: string; expiration?: string },
): string {
  const parts = [request.path, request.operation, request.username, token]
  if (request.expiration !== undefined) parts.push(request.expiration)
  return `v1_${createHash('sha256').update(parts.join(':')).digest('base64').replace(/=+$/, '')}`
}

/** What a signed request says about itself, from its query. */
export function signedRequest(url: URL, operation: Operation) {
  return {
    signature: url.searchParams.get('signature') ?? undefined,
    path: url.searchParams.get('path') ?? '',
    operation,
    username: url.searchParams.get('username') ?? '',
    expiration: url.searchParams.get('signature_expiration') ?? undefined,
  }
}

/** Why a signed request is refused (envd's words), or undefined when it may go through. */
export function refusal(token: string, request: ReturnType<typeof signedRequest>): string | undefined {
  if (request.signature === undefined) return 'missing signature query parameter'
  if (!sameSecret(request.signature, signatureFor(token, request))) return 'invalid signature'
  if (request.expiration !== undefined && Number(request.expiration) < Date.now() / 1000)
    return 'signature is already expired'
  return undefined
}
