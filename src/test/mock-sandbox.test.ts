import { describe, expect, it } from 'vitest'
import { Sandbox } from '../sandbox/index.js'
import { MockSandboxProvider } from './mock-sandbox.js'

describe('MockSandboxProvider', () => {
  it('gives each cell its scripted events through the real Sandbox API, and records the calls', async () => {
    const provider = new MockSandboxProvider((code) => [
      { type: 'stdout', text: `got ${code}\nsecond` },
      { type: 'result', bundle: { 'text/plain': '42' }, isMainResult: true },
    ])
    const sandbox = await Sandbox.create({ provider })
    const lines: string[] = []
    const execution = await sandbox.runCode('x', { onStdout: (m) => lines.push(m.line) })
    expect(lines).toEqual(['got x\n', 'second'])
    expect(execution.text).toBe('42')
    expect(execution.executionCount).toBe(1)
    expect(provider.calls.map((c) => c.code)).toEqual(['x'])
    await sandbox.files.write('a.txt', 'hi')
    expect(await sandbox.files.read('a.txt')).toBe('hi')
    await expect(sandbox.files.read('b.txt')).rejects.toThrow(/no such file/)
  })
})

describe('a provider without commands', () => {
  it('says so when sandbox.commands is used', async () => {
    const sandbox = await Sandbox.create({ provider: new MockSandboxProvider() })
    await expect(sandbox.commands.run('ls')).rejects.toMatchObject({
      name: 'SandboxUnavailableError',
      message: 'The mock sandbox cannot run shell commands',
    })
  })
})
