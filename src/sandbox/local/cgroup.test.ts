import { spawn } from 'node:child_process'
import { readdirSync, writeFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { createCgroup } from './cgroup.js'

const openFiles = () => readdirSync('/proc/self/fd').length
const limits = { memoryBytes: 256 * 1024 ** 2, processes: 64, milliCpus: 0 }
const group = process.geteuid?.() === 0 ? createCgroup(`cgroup-test-${process.pid}`, limits, 0) : undefined

// A sandbox's counters are read from files it keeps open: they must say what is true now, and go
// with the group.
describe.skipIf(!group)("a sandbox's cgroup counters", () => {
  it('read through kept files, say the CPU time as it grows; the files close with the group', async () => {
    const cgroup = group as NonNullable<typeof group>
    const before = openFiles()
    const mark = cgroup.memoryMark()
    expect(cgroup.oomCause(mark)).toBeUndefined()
    const start = cgroup.cpuSeconds()
    expect(start).toBe(0)
    // A process in the group spins for a moment: the same kept file then tells of its CPU time.
    const spinner = spawn('python3', [
      '-c',
      'import time\nt = time.process_time()\nwhile time.process_time() - t < 0.2: pass',
    ])
    for (const file of cgroup.procsFiles) writeFileSync(file, String(spinner.pid))
    await new Promise((resolve) => spinner.once('exit', resolve))
    await expect.poll(() => cgroup.cpuSeconds() ?? 0, { timeout: 10_000 }).toBeGreaterThan(0.05)
    expect(cgroup.memoryMark().oomKills).toBe(mark.oomKills)
    expect(openFiles()).toBeGreaterThan(before)
    cgroup.remove()
    expect(openFiles()).toBeLessThanOrEqual(before)
  })
})
