import { describe, expect, it } from 'vitest'
import { jailStart } from './template-reach.js'

const helper = { python: '/usr/bin/python3', script: '/opt/analyst/analyst_userns.py' }
const reach = { dir: '/root/.analyst/templates/abc', at: '/tmp/analyst-0/1-2/reach/abc' }
const bwrap = ['bwrap', '--ro-bind', '/root/.analyst/templates/abc/rootfs/usr', '/usr', '--', 'python3']

describe('jailStart', () => {
  it('spawns bubblewrap as the uid when there is nothing to reach', () => {
    expect(jailStart(undefined, { uid: 60001, gid: 60001 }, bwrap, helper)).toEqual({
      command: bwrap,
      uid: 60001,
      gid: 60001,
    })
  })

  it("reaches a template from root, its paths moved to the bind's, then becomes the uid", () => {
    const start = jailStart(reach, { uid: 60001, gid: 60001 }, bwrap, helper)
    expect(start.uid).toBeUndefined()
    expect(start.command).toEqual([
      '/usr/bin/python3',
      '-I',
      '-S',
      '/opt/analyst/analyst_userns.py',
      '--reach',
      reach.dir,
      reach.at,
      '--user',
      '60001:60001',
      'bwrap',
      '--ro-bind',
      '/tmp/analyst-0/1-2/reach/abc/rootfs/usr',
      '/usr',
      '--',
      'python3',
    ])
  })

  it('moves only paths in the folder, not those that merely start with its name', () => {
    const start = jailStart(
      reach,
      { map: '0 60010 1' },
      ['bwrap', '/root/.analyst/templates/abcdef', reach.dir],
      helper,
    )
    expect(start.command.slice(-3)).toEqual(['bwrap', '/root/.analyst/templates/abcdef', reach.at])
    expect(start.command).toContain('0 60010 1')
    expect(start.command).not.toContain('--user')
  })
})
