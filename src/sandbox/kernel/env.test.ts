import { describe, expect, it } from 'vitest'
import { kernelEnv } from './env.js'

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

  it('lets the caller override a default', () => {
    expect(kernelEnv('/home/user', { LANG: 'de_DE.UTF-8' }, {}).LANG).toBe('de_DE.UTF-8')
  })
})
