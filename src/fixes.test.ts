import { describe, expect, it } from 'vitest'
import { observe } from './agent/index.js'
import { InvalidArgumentError } from './errors.js'
import { advice, executionFix, phraseFix } from './fixes.js'
import { Execution, ExecutionError } from './sandbox/index.js'

describe('fixes: one setting, phrased by each door', () => {
  const timeout = { setting: 'timeout' } as const

  it('names the flag in the terminal, the option for API clients, the argument for MCP', () => {
    expect(phraseFix(timeout, 'cli')).toMatch(/--timeout/)
    expect(phraseFix(timeout, 'library')).toMatch(/timeoutMs/)
    expect(phraseFix(timeout, 'http')).toMatch(/timeoutMs/)
    expect(phraseFix(timeout, 'mcp')).toMatch(/timeout_ms/)
    for (const door of ['library', 'http', 'mcp', 'model'] as const)
      expect(phraseFix(timeout, door)).not.toMatch(/--/)
  })

  it('tells the model what it can change in its code, not a setting', () => {
    expect(phraseFix(timeout, 'model')).toMatch(/faster|split/)
    expect(phraseFix({ setting: 'model' }, 'model')).toBeUndefined()
  })

  it("names the server's environment where an HTTP or MCP client cannot change the setting itself", () => {
    expect(phraseFix({ setting: 'model' }, 'http')).toMatch(/ANALYST_MODEL/)
    expect(phraseFix({ setting: 'model' }, 'mcp')).toMatch(/ANALYST_MODEL/)
    expect(phraseFix({ setting: 'model' }, 'cli')).toMatch(/--model/)
  })

  it("joins an error's fix and its hint, with the example", () => {
    const error = new InvalidArgumentError('"X1" is not a GPU', {
      hint: 'COUNT from 1 to 8.',
      fix: { setting: 'gpu', example: 'A10G' },
    })
    expect(advice(error, 'cli')).toBe(
      'Give the GPUs as TYPE or TYPE:COUNT (--gpu), e.g. A10G. COUNT from 1 to 8.',
    )
    expect(advice(new InvalidArgumentError('plain'), 'cli')).toBeUndefined()
  })

  it("finds the fix of a cell's error from its name and words", () => {
    expect(executionFix({ name: 'TimeoutError', value: '…' })).toEqual(timeout)
    expect(executionFix({ name: 'KernelDied', value: 'out of memory: the sandbox may use 2 GiB' })).toEqual({
      setting: 'memory',
    })
    expect(executionFix({ name: 'KernelDied', value: 'exit code 3' })).toBeUndefined()
    expect(executionFix({ name: 'ValueError', value: 'x' })).toBeUndefined()
  })

  it("the model's observation of a timeout gives advice, an MCP client's names the argument", () => {
    const execution = new Execution()
    execution.error = new ExecutionError(
      'TimeoutError',
      'The cell ran longer than its 1 s timeout and was interrupted; variables and imports are kept.',
      '',
    )
    const forModel = observe({ execution })
    expect(forModel).toMatch(/\[fix\] Make the step faster/)
    expect(forModel).not.toMatch(/--timeout|timeoutMs/)
    expect(observe({ execution, door: 'mcp' })).toMatch(/timeout_ms/)
  })
})
