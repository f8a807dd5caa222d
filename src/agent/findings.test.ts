import { describe, expect, it } from 'vitest'
import { Execution, ExecutionError, Result } from '../sandbox/index.js'
import type { StepRecord } from './events.js'
import { findingsSoFar } from './findings.js'

function record(step: number, execution?: Execution, artifacts: StepRecord['artifacts'] = []): StepRecord {
  return { step, code: `step${step}()`, execution: execution?.toJSON(), artifacts, durationMs: 1 }
}
const printed = (text: string, result?: string) =>
  new Execution(result ? [new Result({ 'text/plain': result }, true)] : [], { stdout: [text], stderr: [] })
const failed = (name: string, value: string) =>
  new Execution([], undefined, new ExecutionError(name, value, ''))

describe('findingsSoFar', () => {
  it('gives the output of the last two steps that succeeded, and their files', () => {
    const csv = { name: 'by_region.csv', path: '/home/user/by_region.csv', size: 120, mimeType: 'text/csv' }
    const steps = [
      record(1, printed('first\n')),
      record(2, printed('total 277162.03\n', '400')),
      record(3, failed('KeyError', "'segment'")),
      record(4, printed(''), [csv]),
      record(5),
    ]
    expect(findingsSoFar(steps, 5)).toBe(
      [
        'The analysis stopped after 5 steps without a final answer (incomplete).',
        'What the code found so far:',
        'Step 2:\ntotal 277162.03\n\n400',
        'Step 4:\n(no output)',
        'Files: by_region.csv (120 bytes, text/csv)',
      ].join('\n'),
    )
  })

  it('says so when no step succeeded, with the last error', () => {
    const steps = [
      record(1, failed('NameError', "name 'df' is not defined")),
      record(2, failed('KeyError', "'x'")),
    ]
    expect(findingsSoFar(steps, 2)).toBe(
      "The analysis stopped after 2 steps without a final answer (incomplete).\nNo step ran without an error.\nThe last error was KeyError: 'x'",
    )
    expect(findingsSoFar([], 3)).toBe(
      'The analysis stopped after 3 steps without a final answer (incomplete).\nNo step ran without an error.',
    )
  })

  it('keeps a long output to its head and tail', () => {
    const answer = findingsSoFar([record(1, printed(`${'a'.repeat(3000)}END`))], 1)
    expect(answer).toMatch(/characters omitted/)
    expect(answer.endsWith('END')).toBe(true)
    expect(answer.length).toBeLessThan(1700)
  })
})
