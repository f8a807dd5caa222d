import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { bwrapArgs, SANDBOX_HOME, ZYGOTE_SOCKET_DIR } from './jail.js'

const venv = mkdtempSync(join(tmpdir(), 'analyst-venv-'))
const python = {
  executable: '/usr/bin/python3',
  version: '3.11.2',
  paths: ['/usr/lib/python3.11', venv],
  modules: {},
}
const spec = {
  python,
  workspace: '/run/sb/work',
  data: '/run/sb/data',
  kernelDir: '/run/kernel',
  etc: '/run/etc',
  network: false,
  tmpBytes: 1024,
  seccomp: true,
  disableUserns: true,
  hostname: true,
}

function pairs(args: string[], flag: string): string[][] {
  const found: string[][] = []
  args.forEach((arg, i) => {
    if (arg === flag) found.push(args.slice(i + 1, i + 3))
  })
  return found
}

describe('bwrapArgs', () => {
  it("gives the zygote root's capabilities, its socket folder and no sandbox's workspace", () => {
    const args = bwrapArgs({ ...spec, zygoteSocketDir: '/run/zygote-1' }, ['python3'])
    expect(args).not.toContain('--unshare-user')
    expect(args).not.toContain('--cap-drop')
    expect(args[args.indexOf('--cap-add') + 1]).toBe('ALL')
    expect(pairs(args, '--bind')).toEqual([['/run/zygote-1', ZYGOTE_SOCKET_DIR]])
    expect(args.join(' ')).not.toContain('/run/sb/')
    expect(pairs(args, '--dir').map(([path]) => path)).toContain(SANDBOX_HOME)
    // A sandbox's own jail has none of it.
    const sandbox = bwrapArgs(spec, ['python3'])
    expect(sandbox).not.toContain('--cap-add')
    expect(sandbox.join(' ')).not.toContain(ZYGOTE_SOCKET_DIR)
  })

  it('cuts the network unless asked, and drops every capability', () => {
    expect(bwrapArgs(spec, ['python3'])).toContain('--unshare-net')
    expect(bwrapArgs({ ...spec, network: true }, ['python3'])).not.toContain('--unshare-net')
    const args = bwrapArgs(spec, ['python3'])
    expect(args).toEqual(
      expect.arrayContaining(['--unshare-user', '--unshare-pid', '--die-with-parent', '--new-session']),
    )
    expect(args[args.indexOf('--cap-drop') + 1]).toBe('ALL')
    expect(args[args.indexOf('--seccomp') + 1]).toBe('6')
    expect(args).toContain('--disable-userns')
    expect(bwrapArgs({ ...spec, seccomp: false, disableUserns: false }, ['python3'])).not.toContain(
      '--seccomp',
    )
  })

  it('binds the workspace read-write, data and the kernel read-only, and nothing else of the host writable', () => {
    const args = bwrapArgs(spec, ['python3'])
    expect(pairs(args, '--bind')).toEqual([['/run/sb/work', '/home/user']])
    const readOnly = pairs(args, '--ro-bind')
    expect(readOnly).toContainEqual(['/run/sb/data', '/home/user/data'])
    expect(readOnly).toContainEqual(['/run/kernel', '/opt/analyst'])
    expect(readOnly.map(([source]) => source)).not.toContain('/etc')
    expect(readOnly.map(([source]) => source)).not.toContain('/')
    expect(readOnly).toContainEqual(['/run/etc/passwd', '/etc/passwd'])
  })

  it('binds an interpreter that lives outside /usr where it is, read-only', () => {
    const readOnly = pairs(bwrapArgs(spec, ['python3']), '--ro-bind')
    expect(readOnly).toContainEqual([venv, venv])
    expect(readOnly.map(([source]) => source)).not.toContain('/usr/lib/python3.11') // under /usr, already bound
  })

  it('names the jail only where the runtime lets it (a container under its default seccomp profile does not)', () => {
    const named = bwrapArgs(spec, ['python3'])
    expect(named[named.indexOf('--hostname') + 1]).toBe('sandbox')
    const unnamed = bwrapArgs({ ...spec, hostname: false }, ['python3'])
    expect(unnamed).not.toContain('--hostname')
    expect(unnamed).toContain('--unshare-uts')
  })

  it('ends with the command after --', () => {
    const args = bwrapArgs(spec, ['python3', '-s', 'kernel.py'])
    expect(args.slice(args.indexOf('--'))).toEqual(['--', 'python3', '-s', 'kernel.py'])
  })
})
