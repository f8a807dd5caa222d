import { spawn } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type CgroupRoot,
  cgroupsAt,
  createCgroup,
  delegateControllers,
  enclosingOomKills,
  memoryBudget,
  SERVER_LEAF,
} from './cgroup.js'

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

/**
 * cgroup v2 as a folder laid out as its files are (this host mounts v1, and v2 cannot have the
 * memory controller while v1 holds it): a container's namespace root with a limit, the groups
 * the kernel would fill on mkdir, and the counters written as the kernel writes them.
 */
describe('cgroup v2, laid out in a folder', () => {
  const MiB = 1024 ** 2
  const EVENTS = 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n'
  let dir: string
  let root: CgroupRoot
  const file = (...path: string[]) => readFileSync(join(root.mount, ...path), 'utf8').trim()
  const put = (text: string, ...path: string[]) => writeFileSync(join(root.mount, ...path), text)

  /** A container's group namespace: /proc/self/cgroup says `0::/` (or `path`), the mount is the container's group. */
  function container(memoryMax: string, path = '/') {
    dir = mkdtempSync(join(tmpdir(), 'analyst-cgroup-v2-'))
    root = {
      self: join(dir, 'cgroup'),
      mount: join(dir, 'fs'),
      // What the kernel puts in a new group (the controllers its parent enabled, here all).
      mkdir: (group) => {
        mkdirSync(group)
        for (const [name, text] of Object.entries(GROUP_FILES)) writeFileSync(join(group, name), text)
      },
    }
    writeFileSync(root.self, `0::${path}\n`)
    mkdirSync(root.mount)
    for (const [name, text] of Object.entries(GROUP_FILES)) put(text, name)
    put(`${memoryMax}\n`, 'memory.max')
  }
  const GROUP_FILES = {
    'cgroup.controllers': 'cpuset cpu io memory hugetlb pids rdma misc\n',
    'cgroup.subtree_control': '',
    'cgroup.procs': '',
    'cpu.weight': '100\n',
    'cpu.max': 'max 100000\n',
    'memory.max': 'max\n',
    'memory.events': EVENTS,
    'memory.events.local': EVENTS,
    'pids.max': 'max\n',
  }
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('takes the budget from the limit at the namespace root, or from an ancestor where the own group says max', () => {
    container(String(640 * MiB))
    expect(memoryBudget({}, root)).toBe(Math.floor(640 * MiB * 0.8))
    expect(memoryBudget({ ANALYST_MEMORY_BUDGET: '50%' }, root)).toBe(320 * MiB)
    rmSync(dir, { recursive: true })
    // A pod's container without a namespace of its own: its group and the pod's say max, the ancestor has the limit.
    container('max', '/kubepods/pod1/ctr')
    for (const [path, max] of [
      ['kubepods', String(1024 * MiB)],
      ['kubepods/pod1', 'max'],
      ['kubepods/pod1/ctr', 'max'],
    ] as const) {
      mkdirSync(join(root.mount, path))
      put(`${max}\n`, path, 'memory.max')
    }
    expect(memoryBudget({}, root)).toBe(Math.floor(1024 * MiB * 0.8))
    // No limit anywhere: the host's memory.
    put('max\n', 'kubepods', 'memory.max')
    expect(memoryBudget({}, root)).toBe(Math.floor(totalmem() * 0.8))
  })

  it('writes the budget, the limits and the CPU weights: a starting sandbox weighs as the host, then less', () => {
    container(String(640 * MiB))
    const groups = cgroupsAt(root, 512 * MiB)
    const parent = groups?.dirs.get('') as string
    expect(parent).toMatch(/\/fs\/analyst-\d+-\d+$/)
    // The namespace root hands its controllers down (cgroupfs would keep them as `memory pids cpu`).
    expect(file('cgroup.subtree_control')).toBe('+memory +pids +cpu')
    expect(file(parent.slice(root.mount.length), 'memory.max')).toBe(String(512 * MiB))
    expect(file(parent.slice(root.mount.length), 'cpu.weight')).toBe('51')
    const uid = process.getuid?.() ?? 0
    const limits = { memoryBytes: 256 * MiB, processes: 64, milliCpus: 1500 }
    const group = groups?.create('one', limits, uid, { starting: true })
    expect(group?.paths).toEqual([join(parent, 'analyst-one')])
    const own = (name: string) => readFileSync(join(parent, 'analyst-one', name), 'utf8').trim()
    expect([own('memory.max'), own('memory.swap.max'), own('pids.max'), own('cpu.max')]).toEqual([
      String(256 * MiB),
      '0',
      '64',
      '150000 100000',
    ])
    // Starting: the sandbox and the parent weigh as much as the host (100 is cgroup v2's default).
    expect([own('cpu.weight'), readFileSync(join(parent, 'cpu.weight'), 'utf8')]).toEqual(['102', '102'])
    group?.settle()
    expect([own('cpu.weight'), readFileSync(join(parent, 'cpu.weight'), 'utf8')]).toEqual(['26', '51'])
    group?.batch(true)
    expect([own('cpu.idle'), own('cpu.weight')]).toEqual(['1', '26'])
    group?.batch(false)
    expect(own('cpu.idle')).toBe('0')
    expect(group?.procsFiles).toEqual([join(parent, 'analyst-one', 'cgroup.procs')])
  })

  it("tells which limit the OOM killer's kill came from: the sandbox's own, the budget, or neither", () => {
    container(String(640 * MiB))
    const groups = cgroupsAt(root, 512 * MiB)
    const parent = groups?.dirs.get('') as string
    const group = groups?.create('two', { memoryBytes: 256 * MiB, processes: 64, milliCpus: 0 }, 0)
    if (!group) throw new Error('no group was made')
    // A sandbox's group has no children: its events and its local events say the same.
    const events = (text: string) => {
      for (const name of ['memory.events', 'memory.events.local'])
        writeFileSync(join(parent, 'analyst-two', name), text)
    }
    const budgetEvents = (text: string) => writeFileSync(join(parent, 'memory.events.local'), text)
    let mark = group.memoryMark()
    expect(group.oomCause(mark)).toBeUndefined()
    // Its own limit reached and nothing to reclaim: `oom` and `oom_kill` in its own events.
    events('low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n')
    expect(group.oomCause(mark)).toBe('own')
    expect(group.oomKills()).toBe(1)
    // The parent's limit (the budget) reached: the kill is counted in the sandbox, the oom in the parent.
    mark = group.memoryMark()
    events('low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n')
    budgetEvents('low 0\nhigh 0\nmax 1\noom 1\noom_kill 0\n')
    expect(group.oomCause(mark)).toBe('budget')
    // Neither limit: the host (or the container around the server) ran out.
    mark = group.memoryMark()
    events('low 0\nhigh 0\nmax 3\noom 1\noom_kill 3\n')
    expect(group.oomCause(mark)).toBe('host')
    group.remove()
    // A sandbox without a group of its own reads the kills of the group the server runs in.
    put('low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n', 'memory.events')
    expect(enclosingOomKills(root)).toBe(2)
  })

  it('makes no parent where the namespace root has not got the memory controller', () => {
    container(String(640 * MiB))
    put('cpu pids\n', 'cgroup.controllers')
    expect(cgroupsAt(root, 512 * MiB)).toBeUndefined()
    expect(readdirSync(root.mount).filter((name) => name.startsWith('analyst-'))).toEqual([])
  })

  it('says what the sandboxes use together: memory.current less the inactive page cache', () => {
    container(String(640 * MiB))
    const groups = cgroupsAt(root, 512 * MiB)
    const parent = groups?.dirs.get('') as string
    writeFileSync(join(parent, 'memory.current'), `${100 * MiB}\n`)
    writeFileSync(
      join(parent, 'memory.stat'),
      `anon ${90 * MiB}\nfile ${10 * MiB}\ninactive_file ${4 * MiB}\n`,
    )
    expect(groups?.memory()).toEqual({ budgetBytes: 512 * MiB, usedBytes: 96 * MiB })
    groups?.close()
  })

  it("looks at the sandboxes' memory through files kept open, which say what the counters say now", () => {
    container(String(640 * MiB))
    const groups = cgroupsAt(root, 512 * MiB)
    const parent = groups?.dirs.get('') as string
    // Descriptors of this process open on the parent's memory files (the budget looks every 250 ms).
    const kept = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`).startsWith(`${parent}/memory.`)
        } catch {
          return false // the directory's own descriptor, gone by now
        }
      }).length
    const counters = (current: number, inactive: number) => {
      // Rewritten in place, as the kernel's counters change under the same files.
      writeFileSync(join(parent, 'memory.current'), `${current * MiB}\n`)
      writeFileSync(join(parent, 'memory.stat'), `anon 1\nfile 2\ninactive_file ${inactive * MiB}\n`)
    }
    counters(100, 4)
    expect(groups?.memory()?.usedBytes).toBe(96 * MiB)
    expect(kept()).toBe(2)
    counters(300, 50)
    expect(groups?.memory()?.usedBytes).toBe(250 * MiB)
    counters(7, 0)
    expect(groups?.memory()?.usedBytes).toBe(7 * MiB)
    expect(kept()).toBe(2)
    groups?.close()
    expect(kept()).toBe(0)
  })
})

/**
 * v2's "no internal processes" rule, on this kernel: its v2 hierarchy (beside v1, which holds
 * memory, pids and cpu) has hugetlb, a domain controller that the rule covers as it covers memory.
 * A group standing for a container's namespace root holds a process, as the server's would.
 */
const UNIFIED = '/sys/fs/cgroup/unified'
const hugetlb =
  process.geteuid?.() === 0 &&
  existsSync(join(UNIFIED, 'cgroup.controllers')) &&
  readFileSync(join(UNIFIED, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('hugetlb')

describe.skipIf(!hugetlb)('cgroup v2 on this kernel: a group that holds processes', () => {
  it('moves them into a leaf beside the children, then delegates the controllers', async () => {
    const subtree = (dir: string) => readFileSync(join(dir, 'cgroup.subtree_control'), 'utf8').trim()
    const enabled = subtree(UNIFIED).split(' ').includes('hugetlb')
    if (!enabled) writeFileSync(join(UNIFIED, 'cgroup.subtree_control'), '+hugetlb')
    const container = join(UNIFIED, `analyst-test-${process.pid}`)
    mkdirSync(container)
    const server = spawn('sleep', ['infinity'])
    const leaf = join(container, SERVER_LEAF)
    try {
      writeFileSync(join(container, 'cgroup.procs'), String(server.pid))
      // The rule: no controller for the children while the group holds a process.
      expect(() => writeFileSync(join(container, 'cgroup.subtree_control'), '+hugetlb')).toThrow(/EBUSY/)
      expect(delegateControllers(container, ['hugetlb', 'memory'], ['hugetlb'])).toBe(true)
      expect(readFileSync(join(container, 'cgroup.procs'), 'utf8')).toBe('')
      expect(readFileSync(join(leaf, 'cgroup.procs'), 'utf8').trim()).toBe(String(server.pid))
      expect(subtree(container)).toBe('hugetlb')
      // Done once: a second start finds the controllers delegated and moves nothing.
      expect(delegateControllers(container, ['hugetlb'], ['hugetlb'])).toBe(true)
      // A controller the group has not got (v1 holds memory here) cannot be required.
      expect(delegateControllers(container, ['memory'], ['memory'])).toBe(false)
    } finally {
      if (existsSync(leaf)) writeFileSync(join(UNIFIED, 'cgroup.procs'), String(server.pid))
      server.kill('SIGKILL')
      if (existsSync(leaf)) rmdirSync(leaf)
      rmdirSync(container)
      if (!enabled) writeFileSync(join(UNIFIED, 'cgroup.subtree_control'), '-hugetlb')
    }
  })
})
