import { describe, expect, it } from 'vitest'
import { BUILD_PATH, buildEnv, buildJailArgs } from './jail.js'

const valuesOf = (args: string[], flag: string) =>
  args.flatMap((arg, i) => (arg === flag ? [args[i + 1]] : []))

describe('the build jail', () => {
  it('roots a step in the template, with the network only when asked and a package manager’s capabilities', () => {
    const spec = {
      root: '/t/rootfs',
      network: false,
      binds: [{ src: '/ctx/a', dest: '/tmp/.analyst-copy/src' }],
      env: { PATH: BUILD_PATH },
      cwd: '/',
    }
    const offline = buildJailArgs(spec, ['/bin/sh', '-c', 'true'])
    expect(offline).toContain('--unshare-net')
    expect(offline).not.toContain('--unshare-user')
    expect(offline.join(' ')).toContain('--bind /t/rootfs /')
    expect(offline.join(' ')).toContain('--ro-bind /ctx/a /tmp/.analyst-copy/src')
    expect(valuesOf(offline, '--cap-drop')).toEqual(['ALL'])
    expect(valuesOf(offline, '--cap-add')).not.toContain('CAP_SYS_ADMIN')
    expect(valuesOf(offline, '--cap-add')).not.toContain('CAP_NET_RAW')
    expect(offline).toContain('--clearenv')
    expect(offline.slice(-4)).toEqual(['--', '/bin/sh', '-c', 'true'])
    const online = buildJailArgs({ ...spec, network: true }, ['true'])
    expect(online).not.toContain('--unshare-net')
    expect(online.join(' ')).toContain('--ro-bind /etc/resolv.conf /etc/resolv.conf')
  })

  it('over the host, binds the system read-only and only the venv writable, as an unprivileged user', () => {
    const args = buildJailArgs({ hostVenv: '/t/venv', network: false, binds: [], env: {}, cwd: '/tmp' }, [
      'true',
    ])
    expect(args).toContain('--unshare-user')
    expect(valuesOf(args, '--uid')).toEqual(['1000'])
    expect(args.join(' ')).toContain('--bind /t/venv /opt/venv')
    expect(valuesOf(args, '--bind')).toEqual(['/t/venv'])
    expect(args.join(' ')).not.toMatch(/--ro-bind \/etc\/(shadow|passwd|resolv.conf) /)
  })

  it("gives a step no host secret and no ANALYST_ variable; the build's PATH (the venv first) after the template's", () => {
    const env = buildEnv({
      templateEnv: { PATH: '/opt/tools/bin:/usr/bin', ANALYST_TOKEN: 'from-a-spec' },
      pipEnv: { PIP_INDEX_URL: 'http://127.0.0.1:1/simple' },
      network: true,
      host: {
        OPENAI_API_KEY: 'sk-secret',
        ANALYST_TOKEN: 'secret',
        https_proxy: 'http://proxy:3128',
        HOME: '/root',
      },
      home: '/root',
    })
    expect(env.OPENAI_API_KEY).toBeUndefined()
    expect(env.ANALYST_TOKEN).toBeUndefined()
    expect(env.https_proxy).toBe('http://proxy:3128')
    expect(env.PIP_INDEX_URL).toBe('http://127.0.0.1:1/simple')
    expect(env.PATH?.split(':').slice(0, 3)).toEqual(['/opt/tools/bin', '/usr/bin', '/opt/venv/bin'])
    expect(buildEnv({ templateEnv: {}, pipEnv: {}, network: false, home: '/root' }).PATH).toBe(BUILD_PATH)
    expect(BUILD_PATH.startsWith('/opt/venv/bin:')).toBe(true)
    const offline = buildEnv({
      templateEnv: {},
      pipEnv: {},
      network: false,
      host: { https_proxy: 'x' },
      home: '/root',
    })
    expect(offline.https_proxy).toBeUndefined()
  })
})
