import { describe, expect, it } from 'vitest'
import { waitFor } from '../../test/support/wait.js'
import { Sandbox } from '../sandbox/index.js'
import { describeConformance } from './conformance.js'
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

// The engine-independent part of the conformance suite: what a sandbox refuses once killed.
describeConformance({
  name: 'mock',
  python: false,
  create: (options) => Sandbox.create({ ...options, provider: new MockSandboxProvider() }),
})

describe('Sandbox.create and the spec version', () => {
  it('refuses a provider of a version it does not know, with a clear error, before creating anything', async () => {
    const provider = new MockSandboxProvider()
    const future = Object.assign(Object.create(provider), { specificationVersion: 'v9' })
    await expect(Sandbox.create({ provider: future })).rejects.toMatchObject({
      name: 'InvalidArgumentError',
      message: 'The mock sandbox provider implements specification version "v9"; this Analyst knows v1',
    })
    const unversioned = { name: 'old', doCreate: provider.doCreate.bind(provider) }
    await expect(Sandbox.create({ provider: unversioned as never })).rejects.toThrow(/version null/)
    expect(provider.sandboxes).toEqual([])
  })
})

describe('an async mock cell', () => {
  it('streams its events as they come, and an abort interrupts it with the reason', async () => {
    let release: () => void = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    const provider = new MockSandboxProvider(async function* (code) {
      yield { type: 'stdout', text: `started ${code}\n` }
      if (code === 'wait') await new Promise(() => {})
      await released
      yield { type: 'stdout', text: 'done\n' }
    })
    const sandbox = await Sandbox.create({ provider })
    const lines: string[] = []
    const running = sandbox.runCode('go', { onStdout: (m) => lines.push(m.line) })
    await waitFor(() => lines.length === 1, { what: 'the first line' })
    release()
    expect((await running).logs.stdout).toEqual(['started go\n', 'done\n'])

    const controller = new AbortController()
    const waiting = sandbox.runCode('wait', {
      signal: controller.signal,
      onStdout: () => controller.abort(new Error('stopped')),
    })
    await expect(waiting).rejects.toThrow('stopped')
    expect(provider.calls.map((c) => c.code)).toEqual(['go', 'wait'])
  })
})
