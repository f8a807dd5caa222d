import { describe, expect, it } from 'vitest'
import { openApiDocument } from './openapi.js'

type Responses = Record<string, { $ref?: string; description?: string }>
const METHODS = ['get', 'put', 'post', 'delete', 'patch']

/** Every operation under /api, with its responses. */
function apiOperations(): Array<{ name: string; responses: Responses }> {
  return Object.entries(openApiDocument.paths as Record<string, Record<string, unknown>>)
    .filter(([path]) => path.startsWith('/api/'))
    .flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([key]) => METHODS.includes(key))
        .map(([method, operation]) => ({
          name: `${method.toUpperCase()} ${path}`,
          responses: (operation as { responses: Responses }).responses,
        })),
    )
}

/** A reference of the document, followed. */
function resolve(ref: string): Record<string, unknown> {
  return ref
    .slice(2)
    .split('/')
    .reduce<Record<string, unknown>>((node, key) => node[key] as Record<string, unknown>, openApiDocument)
}

describe('the OpenAPI document: fault answers', () => {
  it('every /api operation says it can answer 503 (with Retry-After) and 507, with the error body', () => {
    const operations = apiOperations()
    expect(operations.length).toBeGreaterThan(30)
    for (const { name, responses } of operations) {
      expect(responses[503]?.$ref, name).toBe('#/components/responses/Unavailable')
      expect(responses[507]?.$ref, name).toBe('#/components/responses/DiskFull')
    }
    const unavailable = resolve('#/components/responses/Unavailable') as {
      headers: Record<string, { $ref: string }>
      content: Record<string, { schema: { $ref: string } }>
    }
    expect(resolve(unavailable.headers['Retry-After']?.$ref as string)).toMatchObject({
      schema: { type: 'integer' },
    })
    for (const ref of ['#/components/responses/Unavailable', '#/components/responses/DiskFull']) {
      const { content } = resolve(ref) as { content: Record<string, { schema: { $ref: string } }> }
      const schema = resolve(content['application/json']?.schema.$ref as string)
      expect(schema, ref).toMatchObject({ properties: { error: { required: ['message'] } } })
    }
  })

  it('a question and a cell name the memory budget in their 503', () => {
    const byName = new Map(apiOperations().map((operation) => [operation.name, operation.responses]))
    for (const name of ['POST /api/sessions/{id}/ask', 'POST /api/sessions/{id}/cells'])
      expect(byName.get(name)?.[503]?.description, name).toMatch(/memory budget/)
  })

  it('leaves the routes outside /api as they are', () => {
    const health = (openApiDocument.paths as Record<string, Record<string, { responses?: object }>>)[
      '/healthz'
    ]
    expect(Object.keys(health?.get?.responses ?? {})).toEqual(['200'])
  })
})
