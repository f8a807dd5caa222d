/**
 * deploy/compose.jupyter.yaml over compose.yaml (./compose.ts), with the Jupyter Server image
 * npm run image -- --with jupyter builds from Debian's packages: the replicas' cells run in its
 * kernels, not in jails, and a pandas cell is answered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionDetail } from '../../src/server/types.js'
import { lastObservation } from '../support/fake-openai.js'
import { type Stack, startStack } from './compose.js'
import { FROM_CONTAINERFILE, JUPYTER_IMAGE, must, PROJECT } from './podman.js'

let stack: Stack

// The image from deploy/Containerfile runs container.test.ts alone (no compose images with it).
describe.skipIf(FROM_CONTAINERFILE)('deploy/compose.jupyter.yaml', () => {
  beforeAll(async () => {
    stack = await startStack({
      files: ['compose.jupyter.yaml'],
      env: ['JUPYTER_TOKEN=compose-test-jupyter-token', `JUPYTER_IMAGE=${JUPYTER_IMAGE}`],
    })
  })

  afterAll(async () => {
    await stack?.down()
  })

  it("runs the replicas' cells in the Jupyter Server's kernels", async () => {
    const id = (JSON.parse(await stack.inReplica('analyst-a', 'POST', '/api/sessions', {})) as { id: string })
      .id
    stack.script.push(
      {
        code: [
          'import os, pandas as pd',
          "df = pd.DataFrame({'city': ['Oslo', 'Lima', 'Oslo'], 'sales': [3, 4, 5]})",
          "print(df.groupby('city').sales.sum().to_dict(), os.uname().nodename, os.getcwd())",
        ].join('\n'),
      },
      (request) => ({ content: `Seen: ${lastObservation(request)}` }),
    )
    const events = await stack.inReplica('analyst-b', 'POST', `/api/sessions/${id}/ask`, {
      question: 'Sales by city?',
    })
    expect(events).toContain('event: done')
    const seen = JSON.parse(await stack.inReplica('analyst-a', 'GET', `/api/sessions/${id}`)) as SessionDetail
    const answer = seen.runs[0]?.answer ?? ''
    expect(answer).toContain("{'Lima': 4, 'Oslo': 8}")
    // The kernel ran in the jupyter service's container (its hostname), under its /data.
    const jupyterHost = (await must(['exec', `${PROJECT}_jupyter_1`, 'hostname'])).trim()
    expect(answer).toContain(jupyterHost)
    expect(answer).toMatch(/ \/data/)
  })
})
