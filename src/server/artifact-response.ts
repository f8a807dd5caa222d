/**
 * A session's artifact as an HTTP response: what model-written code saved is untrusted, so it is
 * never run in this origin (a sandboxing CSP, no sniffing; anything but a plain image downloads).
 * @module
 */
import { Readable } from 'node:stream'
import type { StoredArtifact } from '../store/index.js'

export function artifactResponse(artifact: StoredArtifact, content: Readable): Response {
  const headers: Record<string, string> = {
    'content-type': artifact.mimeType,
    'content-length': String(artifact.size),
    'content-security-policy': "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'",
    'x-content-type-options': 'nosniff',
  }
  if (!artifact.mimeType.startsWith('image/') || artifact.mimeType === 'image/svg+xml') {
    headers['content-disposition'] =
      `attachment; filename*=UTF-8''${encodeURIComponent(artifact.name.split('/').pop() ?? artifact.name)}`
  }
  return new Response(Readable.toWeb(content) as ReadableStream, { headers })
}
