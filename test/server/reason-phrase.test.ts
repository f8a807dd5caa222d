/**
 * An error answer's words in the HTTP status line, over a real Node server (@hono/node-server, as
 * `analyst serve` runs): what E2B's code-interpreter SDK shows of a 503 (`503 <reason>`).
 */
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { reasonPhrase, reasonPhrases, withReason } from '../../src/server/reason-phrase.js'

let server: ReturnType<typeof serve>
let url: string

beforeAll(async () => {
  const app = new Hono()
  app.use('*', reasonPhrases)
  app.get('/full', (c) => {
    c.header('retry-after', '10')
    return withReason(c.json({ code: 503, message: 'x' }, 503), 'The budget is used … try again in 10 s.')
  })
  app.get('/bad', (c) => withReason(c.json({}, 400), 'A client mistake'))
  app.get('/plain', (c) => c.json({}, 503))
  await new Promise<void>((resolve) => {
    server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve())
  })
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

describe('the reason phrase of an error answer', () => {
  it('reaches the status line of a 5xx, with its headers and body', async () => {
    const response = await fetch(`${url}/full`)
    expect(response.status).toBe(503)
    expect(response.statusText).toBe('The budget is used ... try again in 10 s.')
    expect(response.headers.get('retry-after')).toBe('10')
    expect(await response.json()).toEqual({ code: 503, message: 'x' })
  })

  it("leaves a client's error and an answer without one as HTTP names them", async () => {
    expect((await fetch(`${url}/bad`)).statusText).toBe('Bad Request')
    expect((await fetch(`${url}/plain`)).statusText).toBe('Service Unavailable')
  })

  it('is one line of printable ASCII, bounded', () => {
    expect(reasonPhrase('Les bacs à sable ‘pleins’\n\tréessayez…')).toBe(
      "Les bacs a sable 'pleins' reessayez...",
    )
    expect(reasonPhrase('x'.repeat(1000))).toHaveLength(400)
  })
})
