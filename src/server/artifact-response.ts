/**
 * A session's artifact (or data file) as an HTTP response: what model-written code saved, or a user
 * uploaded, is untrusted, so it is never run in this origin (a sandboxing CSP, no sniffing;
 * anything but a plain image downloads).
 * @module
 */
import { Readable } from 'node:stream'
import type { StoredArtifact, StoredDataset } from '../store/index.js'

export function artifactResponse(
  artifact: Pick<StoredArtifact, 'name' | 'mimeType' | 'size'>,
  content: Readable,
): Response {
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

/** A data file of a session as it was added: always a download. */
export function dataFileResponse(dataset: StoredDataset, content: Readable): Response {
  return artifactResponse(
    { name: dataset.name, mimeType: 'application/octet-stream', size: dataset.bytes },
    content,
  )
}
