/**
 * deploy/compose.yaml as a user runs it (./compose.ts): two replicas over PostgreSQL behind
 * HAProxy answer one session: made on one, asked on the other, read through the proxy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionDetail } from '../../src/server/types.js'
import { type Stack, startStack, TOKEN } from './compose.js'
import { FROM_CONTAINERFILE } from './podman.js'

let stack: Stack

// The image from deploy/Containerfile runs container.test.ts alone (no compose images with it).
describe.skipIf(FROM_CONTAINERFILE)('deploy/compose.yaml', () => {
  beforeAll(async () => {
    stack = await startStack()
  })

  afterAll(async () => {
    await stack?.down()
  })

  it('serves one session from both replicas over PostgreSQL, behind the proxy', async () => {
    const id = (JSON.parse(await stack.inReplica('analyst-a', 'POST', '/api/sessions', {})) as { id: string })
      .id
    stack.script.push(
      { code: 'import pandas as pd\nx = pd.Series([20, 22]).sum()\nprint(x)' },
      { content: 'It is 42.' },
    )
    const events = await stack.inReplica('analyst-b', 'POST', `/api/sessions/${id}/ask`, {
      question: 'What is 20 + 22?',
    })
    expect(events).toMatch(/event: done\ndata: .*"answer":"It is 42\."/)
    const seen = JSON.parse(await stack.inReplica('analyst-a', 'GET', `/api/sessions/${id}`)) as SessionDetail
    expect(seen.runs.map((run) => run.answer)).toEqual(['It is 42.'])
    // Through the proxy, with the token, as clients reach it.
    const viaProxy = await fetch(`${stack.url}/api/sessions/${id}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })
    expect(viaProxy.status).toBe(200)
    expect(((await viaProxy.json()) as SessionDetail).runs.map((run) => run.question)).toEqual([
      'What is 20 + 22?',
    ])
    expect((await fetch(`${stack.url}/api/sessions/${id}`)).status).toBe(401)
  })
})
