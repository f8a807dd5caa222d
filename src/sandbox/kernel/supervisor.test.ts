import { describe, expect, it } from 'vitest'
import { SandboxError } from '../errors.js'
import { KernelSupervisor, type SupervisorOptions } from './supervisor.js'

/** A kernel that is only a flag: alive until `die()`. */
class FakeKernel {
  alive = true
  stopped = false
  constructor(readonly id: number) {}
  die() {
    this.alive = false
  }
}

function supervise(overrides: Partial<SupervisorOptions<FakeKernel>> = {}) {
  let next = 1
  const started: FakeKernel[] = []
  const stopped: FakeKernel[] = []
  const supervisor = new KernelSupervisor(new FakeKernel(0), {
    start: async () => {
      const kernel = new FakeKernel(next++)
      started.push(kernel)
      return kernel
    },
    stop: async (kernel) => {
      kernel.stopped = true
      kernel.die()
      stopped.push(kernel)
    },
    describe: async (kernel) => `kernel ${kernel.id} exited`,
    lost: 'State lost.',
    closedError: () => new SandboxError('This sandbox was killed'),
    ...overrides,
  })
  return { supervisor, started, stopped }
}

describe('KernelSupervisor', () => {
  it('gives the running kernel as it is, with nothing to tell', async () => {
    const { supervisor, started } = supervise()
    expect((await supervisor.ready()).id).toBe(0)
    expect(started).toEqual([])
    expect(supervisor.takeNotice()).toBeUndefined()
  })

  it('replaces a kernel that stopped between requests, and tells the next cell why, once', async () => {
    const { supervisor } = supervise()
    supervisor.current.die()
    expect((await supervisor.ready()).id).toBe(1)
    expect(supervisor.takeNotice()).toBe(
      '[The kernel had stopped since the last cell (kernel 0 exited). State lost.]\n',
    )
    expect(supervisor.takeNotice()).toBeUndefined()
  })

  it('starts one kernel for requests that come while a restart runs', async () => {
    const { supervisor, started } = supervise()
    supervisor.current.die()
    const kernels = await Promise.all([supervisor.ready(), supervisor.ready(), supervisor.restart()])
    expect(kernels.map((k) => k.id)).toEqual([1, 1, 1])
    expect(started).toHaveLength(1)
  })

  it('gives the new kernel what the old one had before anyone uses it', async () => {
    const prepared: number[] = []
    const { supervisor } = supervise({
      prepare: async (kernel) => {
        prepared.push(kernel.id)
      },
    })
    supervisor.current.die()
    await supervisor.ready()
    expect(prepared).toEqual([1])
  })

  it('ends a new kernel that could not be prepared, and reports why', async () => {
    const { supervisor, stopped } = supervise({
      prepare: async () => {
        throw new Error('context failed')
      },
    })
    supervisor.current.die()
    await expect(supervisor.ready()).rejects.toThrow('context failed')
    expect(stopped.map((k) => k.id)).toEqual([1])
  })

  it('gives up after kernels in a row stop before they run a cell; a cell that runs starts the count again', async () => {
    const { supervisor, started } = supervise({ restartLimit: 3 })
    for (let i = 0; i < 2; i++) {
      supervisor.current.die()
      await supervisor.ready()
    }
    supervisor.running() // the second new kernel took a cell
    for (let i = 0; i < 3; i++) {
      supervisor.current.die()
      await supervisor.ready()
    }
    supervisor.current.die()
    await expect(supervisor.ready()).rejects.toThrow(/stopped 3 times in a row/)
    expect(started).toHaveLength(5)
  })

  it('a failed start is reported to the request that waits for it, and the next request tries again', async () => {
    let fail = true
    const { supervisor } = supervise({
      start: async () => {
        if (fail) throw new Error('no memory')
        return new FakeKernel(9)
      },
    })
    supervisor.current.die()
    await expect(supervisor.ready()).rejects.toThrow('no memory')
    fail = false
    expect((await supervisor.ready()).id).toBe(9)
  })

  it('once closed, starts nothing and ends a kernel whose start was under way', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const { supervisor, stopped } = supervise({
      start: async () => {
        await gate
        return new FakeKernel(7)
      },
    })
    supervisor.current.die()
    const restarting = supervisor.restart()
    const closing = supervisor.close()
    release()
    await expect(restarting).rejects.toThrow(/killed/)
    expect((await closing).id).toBe(0)
    expect(stopped.map((k) => k.id)).toEqual([7])
    await expect(supervisor.ready()).rejects.toThrow(/killed/)
  })
})
