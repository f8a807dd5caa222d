import { describe, expect, it } from 'vitest'
import { parseStopNotice } from './stop-feed.js'

describe('parseStopNotice', () => {
  it('reads the notices as sent', () => {
    const request = {
      id: 'r',
      sessionId: 's',
      runId: null,
      from: 'b',
      holder: 'a',
      requestedAt: 1_700_000_000_000,
    }
    expect(parseStopNotice(JSON.stringify({ type: 'request', request }))).toEqual({
      type: 'request',
      request,
    })
    expect(parseStopNotice('{"type":"answer","id":"r"}')).toEqual({ type: 'answer', id: 'r' })
  })

  it('takes anything else for no notice: a broken payload, a kind it does not know, a field missing', () => {
    for (const payload of [
      'not json',
      'null',
      '{"type":"cancel","id":"r"}',
      '{"type":"request","request":{"id":"r","sessionId":"s","from":"b"}}',
      '{"type":"request","request":{"id":1,"sessionId":"s","runId":null,"from":"b","holder":null,"requestedAt":1}}',
      '{"type":"request","request":{"id":"r","sessionId":"s","runId":null,"from":"b","holder":null}}',
    ])
      expect(parseStopNotice(payload)).toBeUndefined()
  })
})
