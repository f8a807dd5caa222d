/**
 * The kernel protocol on the oldest CPython it supports, 3.9 (Debian bullseye's 3.9.2), in a
 * template that holds nothing but what the kernel needs (test/support/templates.ts): state across
 * cells, an exception, a timeout that interrupts and keeps the state, and output and cells large
 * enough to take several frames, in characters of more than one byte.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider, Sandbox } from '../../src/index.js'
import { BULLSEYE, canMakeTemplates, TEMPLATE_HOME, testTemplate } from '../support/templates.js'

const provider = new LocalProvider({ poolSize: 0, interruptGraceMs: 1000, home: TEMPLATE_HOME })

describe.runIf(canMakeTemplates)('the kernel on Python 3.9 (a bullseye template)', () => {
  let sandbox: Sandbox
  beforeAll(async () => {
    await testTemplate(BULLSEYE)
    sandbox = await Sandbox.create({ provider, template: BULLSEYE })
  }, 900_000)
  afterAll(async () => {
    await sandbox?.kill()
    await provider.close()
  })

  it("runs the template's Python 3.9, with no numpy or pandas, and keeps state across cells", async () => {
    const first = await sandbox.runCode(
      [
        'import importlib.util, os, sys',
        "print(sys.version.split()[0], os.environ.get('ANALYST_TEMPLATE_TEST'))",
        "kept = [importlib.util.find_spec(name) is None for name in ('numpy', 'pandas')]",
      ].join('\n'),
    )
    expect(first.error).toBeUndefined()
    expect(first.logs.stdout.join('')).toMatch(/^3\.9\.\d+ bullseye\n$/)
    expect((await sandbox.runCode('kept')).text).toBe('[True, True]')
    expect(sandbox.environment?.python).toMatch(/^3\.9\./)
  })

  it('reports an exception with its traceback, and goes on', async () => {
    const execution = await sandbox.runCode('def ratio(a, b):\n    return a / b\n\nratio(1, 0)')
    expect(execution.error).toMatchObject({ name: 'ZeroDivisionError', value: 'division by zero' })
    expect(execution.error?.traceback).toContain('ratio')
    expect((await sandbox.runCode('ratio(6, 3)')).text).toBe('2.0')
  })

  it('interrupts a cell at its timeout and keeps the variables set before and in it', async () => {
    await sandbox.runCode('before = 40')
    const execution = await sandbox.runCode('import time\nduring = 2\nwhile True:\n    time.sleep(0.05)', {
      timeoutMs: 1500,
    })
    expect(execution.error?.name).toBe('TimeoutError')
    expect((await sandbox.runCode('before + during')).text).toBe('42')
  })

  it('carries 700,000 characters of output and a 3 MB cell of two-byte characters whole', async () => {
    const printed = await sandbox.runCode("print('ü' * 700_000)")
    expect(printed.error).toBeUndefined()
    expect(printed.logs.stdout.join('')).toBe(`${'ü'.repeat(700_000)}\n`)
    const text = 'é'.repeat(1_500_000) // 3,000,000 bytes in UTF-8
    const cell = await sandbox.runCode(`text = '${text}'\n(len(text), len(text.encode()), text[-1])`)
    expect(cell.error).toBeUndefined()
    expect(cell.text).toBe("(1500000, 3000000, 'é')")
  })
})
