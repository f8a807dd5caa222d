import { getSignature } from 'e2b'
import { describe, expect, it } from 'vitest'
import { refusal, signatureFor, signedRequest } from './signing.js'

const TOKEN = 'envd-token'

describe('signed file URLs', () => {
  it("makes the signature the SDK's getSignature makes, with and without an expiry", async () => {
    const plain = await getSignature({
      path: 'a.txt',
      operation: 'read',
      user: undefined,
      envdAccessToken: TOKEN,
    })
    expect(signatureFor(TOKEN, { path: 'a.txt', operation: 'read', username: '' })).toBe(plain.signature)
    const timed = await getSignature({
      path: 'up/b.txt',
      operation: 'write',
      user: 'user',
      expirationInSeconds: 60,
      envdAccessToken: TOKEN,
    })
    const signed = {
      path: 'up/b.txt',
      operation: 'write' as const,
      username: 'user',
      expiration: String(timed.expiration),
    }
    expect(signatureFor(TOKEN, signed)).toBe(timed.signature)
  })

  it("refuses what the signature does not cover, in envd's words", async () => {
    const request = (query: string, operation: 'read' | 'write' = 'read') =>
      signedRequest(new URL(`http://x/files?${query.replaceAll('+', '%2B')}`), operation)
    const { signature } = await getSignature({
      path: 'a.txt',
      operation: 'read',
      user: undefined,
      envdAccessToken: TOKEN,
    })
    expect(refusal(TOKEN, request(`path=a.txt&signature=${signature}`))).toBeUndefined()
    expect(refusal(TOKEN, request(`path=b.txt&signature=${signature}`))).toBe('invalid signature')
    expect(refusal(TOKEN, request(`path=a.txt&signature=${signature}`, 'write'))).toBe('invalid signature')
    expect(refusal('another', request(`path=a.txt&signature=${signature}`))).toBe('invalid signature')
    expect(refusal(TOKEN, request('path=a.txt'))).toBe('missing signature query parameter')
    const old = await getSignature({
      path: 'a.txt',
      operation: 'read',
      user: undefined,
      expirationInSeconds: -5,
      envdAccessToken: TOKEN,
    })
    expect(
      refusal(TOKEN, request(`path=a.txt&signature=${old.signature}&signature_expiration=${old.expiration}`)),
    ).toBe('signature is already expired')
  })
})
