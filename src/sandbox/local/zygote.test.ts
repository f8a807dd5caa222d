import { afterAll, describe, expect, it } from 'vitest'
import { Sandbox } from '../sandbox.js'
import { LocalProvider } from './backend.js'
import { stopTemplates } from './zygote.js'

const isRoot = process.geteuid?.() === 0
const provider = new LocalProvider({ poolSize: 0, coldStart: 'fork' })

afterAll(() => stopTemplates())

describe.runIf(isRoot)('sandboxes forked from the template', () => {
  it('run pandas in a jail of their own', async () => {
    const sandbox = await Sandbox.create({ provider })
    try {
      const run = await sandbox.runCode(
        "import os, pandas as pd\nprint(os.getuid() != 0, os.getcwd(), open('/proc/1/cmdline','rb').read().split(b'\\0')[1:3])\npd.DataFrame({'a': [1, 2]}).a.sum()",
      )
      expect(run.error).toBeUndefined()
      expect(run.text).toBe('3')
      expect(run.logs.stdout.join('')).toMatch(/^True \/home\/user/)
    } finally {
      await sandbox.kill()
    }
  })
})
