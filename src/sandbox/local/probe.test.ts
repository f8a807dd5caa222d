import { describe, expect, it } from 'vitest'
import { startHint } from './kernel.js'
import { jailFailureFix } from './probe.js'

describe('jailFailureFix', () => {
  it('names the flag a container lacks when bubblewrap cannot mount /proc, not user namespaces', () => {
    const output = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"
    expect(jailFailureFix(output, 'container')).toBe(
      'bubblewrap cannot mount /proc: run the container with --security-opt unmask=/proc/*',
    )
    expect(jailFailureFix(output, 'kubernetes')).toMatch(/procMount: Unmasked .*hostUsers: false/)
    expect(startHint(output).hint).not.toMatch(/user namespace/)
  })

  it('tells a host how to enable user namespaces, and a container what refuses them', () => {
    const output =
      'bwrap: No permissions to creat new namespace, likely because the kernel does not allow non-privileged user namespaces.'
    expect(jailFailureFix(output, 'host')).toMatch(/sudo sysctl -w kernel.unprivileged_userns_clone=1/)
    expect(jailFailureFix(output, 'container')).toMatch(/in this container: the runtime's seccomp profile/)
  })

  it('blames nothing for a refusal it cannot place', () => {
    expect(jailFailureFix('bwrap: execvp /usr/bin/python3: Operation not permitted', 'host')).toBeUndefined()
  })
})
