/**
 * A session's artifacts (its charts and the files its code saved) as MCP resources:
 * `analyst://sessions/<id>/artifacts/<name>`, the latest of each name, read from the blob store.
 * A connection sees its own session's files and no other's: another's, or a name never saved, is
 * a resource not found (-32002).
 * @module
 */
import type { Variables } from '@modelcontextprotocol/sdk/shared/uriTemplate.js'
import type { ReadResourceResult, Resource } from '@modelcontextprotocol/sdk/types.js'
import { NotFoundError, TooLargeError } from '../errors.js'
import type { SessionService } from '../session/index.js'
import { artifactUri } from './content.js'
import { resourceNotFound } from './protocol.js'

/** The URIs of a session's files. */
export const ARTIFACT_TEMPLATE = 'analyst://sessions/{session}/artifacts/{+name}'

/** Larger files are refused: a resource travels whole, base64 in one JSON message. */
export const MAX_RESOURCE_BYTES = 16 * 1024 * 1024

/** Types whose content goes as text rather than base64. */
function isText(mimeType: string): boolean {
  return (
    mimeType.startsWith('text/') ||
    /^application\/(json|xml|javascript|x-ndjson|.*\+json|.*\+xml)$/.test(mimeType) ||
    mimeType === 'image/svg+xml'
  )
}

export async function artifactResources(
  service: SessionService,
  sessionId: string,
  owner?: string | null,
): Promise<Resource[]> {
  await service.getSession(sessionId, owner)
  const latest = new Map<string, Resource>()
  for (const artifact of await service.history.artifacts(sessionId)) {
    latest.delete(artifact.name) // the newest goes last
    latest.set(artifact.name, {
      uri: artifactUri(sessionId, artifact.name),
      name: artifact.name,
      mimeType: artifact.mimeType,
      size: artifact.size,
      description: artifact.kind === 'image' ? 'A chart' : 'A file the code saved',
    })
  }
  return [...latest.values()]
}

export async function readArtifact(
  service: SessionService,
  connection: { sessionId: string; owner?: string | null },
  uri: URL,
  variables: Variables,
): Promise<ReadResourceResult> {
  const one = (value: Variables[string] | undefined) =>
    Array.isArray(value) ? value.join('/') : (value ?? '')
  const session = decodeURIComponent(one(variables.session))
  const name = one(variables.name).split('/').map(decodeURIComponent).join('/')
  if (session !== connection.sessionId) throw resourceNotFound(uri.href)
  const { artifact, content } = await service
    .openArtifact(session, name, connection.owner)
    .catch((error: unknown) => {
      throw NotFoundError.isInstance(error) ? resourceNotFound(uri.href) : error
    })
  if (artifact.size > MAX_RESOURCE_BYTES) {
    content.destroy()
    throw new TooLargeError(
      `${name} has ${artifact.size} bytes, over the ${MAX_RESOURCE_BYTES} a resource can carry`,
      {
        hint: 'Read a part of it with run_python, or export the session.',
      },
    )
  }
  const chunks: Buffer[] = []
  for await (const chunk of content) chunks.push(chunk as Buffer)
  const bytes = Buffer.concat(chunks)
  const base = { uri: uri.href, mimeType: artifact.mimeType }
  return {
    contents: [
      isText(artifact.mimeType)
        ? { ...base, text: bytes.toString('utf8') }
        : { ...base, blob: bytes.toString('base64') },
    ],
  }
}
