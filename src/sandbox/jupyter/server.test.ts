import { describe, expect, it } from 'vitest'
import { pythonLiteral } from './files.js'
import { cellEndFrom } from './prelude.js'
import { checkKernelEnv, jupyterSettings } from './server.js'

describe('jupyter settings', () => {
  it('reads the engine settings from the environment, the flag winning over the variable', () => {
    const env = {
      ANALYST_JUPYTER_URL: 'http://hub:8000/',
      ANALYST_JUPYTER_TOKEN: 'secret',
      ANALYST_JUPYTER_KERNEL: 'python3-gpu',
      ANALYST_JUPYTERHUB_USER: 'alice',
      ANALYST_JUPYTER_START_TIMEOUT: '300',
      ANALYST_HOME: '/var/lib/analyst',
      KERNEL_USERNAME: 'alice',
      KERNEL_NAMESPACE: 'analysts',
      OPENAI_API_KEY: 'never sent',
    }
    expect(jupyterSettings(env)).toEqual({
      url: 'http://hub:8000/',
      token: 'secret',
      kernelName: 'python3-gpu',
      kernelEnv: { KERNEL_USERNAME: 'alice', KERNEL_NAMESPACE: 'analysts' },
      hubUser: 'alice',
      createTimeoutMs: 300_000,
      recordDir: '/var/lib/analyst/jupyter-kernels',
    })
    expect(jupyterSettings(env, { jupyterKernel: 'ir' }).kernelName).toBe('ir')
    expect(jupyterSettings({}).kernelName).toBe('python3')
    expect(() => jupyterSettings({ ANALYST_JUPYTER_START_TIMEOUT: 'soon' })).toThrow(/number of seconds/)
  })

  it('refuses variables a gateway would refuse or never receive', () => {
    expect(() => checkKernelEnv({ KERNEL_USERNAME: 'alice' })).not.toThrow()
    for (const value of ['$(id)', '`id`', 'a\nb', 'x'.repeat(4097)]) {
      expect(() => checkKernelEnv({ KERNEL_USERNAME: value })).toThrow(/refuses/)
    }
    expect(() => checkKernelEnv({ HOME: '/root' })).toThrow(/HOME cannot be sent in the kernel start request/)
  })
})

describe('messages from the kernel', () => {
  it('keeps only well-formed entries of a cell-end report, which user code could forge', () => {
    expect(cellEndFrom({ changed: [['a.csv', '4:1:2', 4], ['bad', 1, 2], 'x'], removed: ['b', 3] })).toEqual({
      changed: [['a.csv', '4:1:2', 4]],
      removed: ['b'],
    })
    expect(cellEndFrom('nope')).toBeUndefined()
    expect(cellEndFrom({ changed: 'all', removed: [] })).toBeUndefined()
  })

  it('writes strings and booleans as Python literals', () => {
    expect(pythonLiteral(true)).toBe('True')
    expect(pythonLiteral('true.csv')).toBe('"true.csv"')
    expect(pythonLiteral('a"b\\\n')).toBe('"a\\"b\\\\\\n"')
  })
})
