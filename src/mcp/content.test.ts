import { describe, expect, it } from 'vitest'
import { Execution } from '../sandbox/index.js'
import { cellContent } from './content.js'

describe("an MCP cell's content", () => {
  it("offers no resource for a file the server's disk refused, and says which and why", () => {
    const file = (name: string) => ({ name, path: `/home/user/${name}`, size: 3, mimeType: 'text/plain' })
    const execution = new Execution([], { stdout: ['written\n'], stderr: [] }, undefined, 1, [
      file('big.bin'),
      file('small.txt'),
    ])
    const content = cellContent(
      {
        runId: 'r',
        execution,
        violations: [],
        refused: [{ name: 'big.bin', reason: "the server's disk is full" }],
      },
      { sessionId: 's', imageNames: [] },
    )
    const text = (content.content[0] as { text: string }).text
    expect(text).toContain('[resources] analyst://sessions/s/artifacts/small.txt\n')
    expect(text).not.toContain('artifacts/big.bin')
    expect(text).toMatch(/\[not kept\] big\.bin: the server's disk is full\. .*do not offer it/)
  })
})
