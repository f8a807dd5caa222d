/**
 * The body E2B's SDK sends to POST /v2/templates/{id}/builds/{buildId}, made by its own Template
 * builder (its serialize, with the COPY steps' files hashed as the SDK hashes them).
 * @module
 */
import { Template } from 'e2b'
import type { E2BBuildBody } from '../../src/templates/e2b.js'

export async function e2bBuildBody(
  build: (template: ReturnType<typeof Template>) => unknown,
  context: string,
): Promise<E2BBuildBody> {
  const template = Template({ fileContextPath: context })
  const built = build(template) as {
    instructionsWithHashes(): Promise<unknown>
    serialize(steps: unknown): unknown
  }
  return built.serialize(await built.instructionsWithHashes()) as E2BBuildBody
}
