import { describe, expect, it } from 'vitest'
import { kernelEnv, threadsFor } from './env.js'

describe('kernelEnv', () => {
  it('lets no host variable in except the math libraries tuning', () => {
    const env = kernelEnv(
      '/home/user',
      { MINE: '1' },
      {
        OPENAI_API_KEY: 'sk-secret',
        AWS_SECRET_ACCESS_KEY: 'x',
        PATH: '/root/.pyenv/bin:/usr/bin',
        OPENBLAS_CORETYPE: 'Haswell',
      },
    )
    expect(env.OPENAI_API_KEY).toBeUndefined()
    expect(env.AWS_SECRET_ACCESS_KEY).toBeUndefined()
    expect(env.PATH).toBe('/usr/local/bin:/usr/bin:/bin')
    expect(env.OPENBLAS_CORETYPE).toBe('Haswell')
    expect(env.MINE).toBe('1')
    expect(env.HOME).toBe('/home/user')
  })

  it("searches the engine's own programs last", () => {
    expect(kernelEnv('/home/user', {}, {}, ['/opt/analyst/bin']).PATH).toBe(
      '/usr/local/bin:/usr/bin:/bin:/opt/analyst/bin',
    )
  })

  it("sizes the math libraries' threads to the sandbox's CPUs, unless the host or the caller says", () => {
    expect(threadsFor(500, 64)).toBe(1)
    expect(threadsFor(1500, 64)).toBe(2)
    expect(threadsFor(8000, 4)).toBe(4)
    expect(threadsFor(0, 64)).toBe(64)
    const env = kernelEnv('/home/user', {}, {}, [], 2)
    for (const name of ['OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'NUMEXPR_MAX_THREADS'])
      expect(env[name]).toBe('2')
    expect(kernelEnv('/home/user', {}, { OMP_NUM_THREADS: '3' }, [], 2).OMP_NUM_THREADS).toBe('3')
    expect(kernelEnv('/home/user', { OPENBLAS_NUM_THREADS: '4' }, {}, [], 2).OPENBLAS_NUM_THREADS).toBe('4')
    // Where the kernel runs elsewhere (Modal), this host's cores say nothing.
    expect(kernelEnv('/home/user', {}, {}).OPENBLAS_NUM_THREADS).toBeUndefined()
  })

  it('lets the caller override a default', () => {
    expect(kernelEnv('/home/user', { LANG: 'de_DE.UTF-8' }, {}).LANG).toBe('de_DE.UTF-8')
  })
})
