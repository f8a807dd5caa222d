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

/** A supervisor of kernel 0 (or, `empty`, of none yet), whose new kernels are numbered from 1. */
function supervise(overrides: Partial<SupervisorOptions<FakeKernel>> = {}, empty = false) {
  let next = 1
  const started: FakeKernel[] = []
  const stopped: FakeKernel[] = []
  const supervisor = new KernelSupervisor(empty ? undefined : new FakeKernel(0), {
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

/** A promise that resolves when the test opens it: what a slow start or preparation waits for. */
function gate() {
  let open!: () => void
  const closed = new Promise<void>((resolve) => {
    open = resolve
  })
  return { closed, open }
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
    // The stopped one too: what it still holds is freed (a Jupyter server keeps a dead kernel).
    expect(stopped.map((k) => k.id)).toEqual([0, 1])
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
    const slow = gate()
    const { supervisor, stopped } = supervise({
      start: async () => {
        await slow.closed
        return new FakeKernel(7)
      },
    })
    supervisor.current.die()
    const restarting = supervisor.restart()
    const closing = supervisor.close()
    slow.open()
    await expect(restarting).rejects.toThrow(/killed/)
    expect((await closing)?.id).toBe(0)
    expect(stopped.map((k) => k.id)).toEqual([0, 7])
    await expect(supervisor.ready()).rejects.toThrow(/killed/)
  })

  it('with no kernel yet, the first request starts one, with nothing to tell', async () => {
    const { supervisor: empty, started } = supervise({}, true)
    expect(() => empty.current).toThrow(/No kernel has started yet/)
    expect((await empty.ready()).id).toBe(1)
    expect(empty.current.id).toBe(1)
    expect(empty.takeNotice()).toBeUndefined()
    expect(started).toHaveLength(1)
  })

  it('a first start under way when it is closed: that kernel is ended, and nothing is left to end', async () => {
    const slow = gate()
    const { supervisor: empty, stopped } = supervise(
      {
        start: async () => {
          await slow.closed
          return new FakeKernel(3)
        },
      },
      true,
    )
    const starting = empty.ready()
    const closing = empty.close()
    slow.open()
    await expect(starting).rejects.toThrow(/killed/)
    expect(await closing).toBeUndefined()
    expect(stopped.map((k) => k.id)).toEqual([3])
  })

  it('closed while a new kernel is prepared: that kernel is ended, and the restart refused', async () => {
    const entered = gate()
    const slow = gate()
    const { supervisor, stopped } = supervise({
      prepare: () => {
        entered.open()
        return slow.closed
      },
    })
    supervisor.current.die()
    const restarting = supervisor.restart()
    await entered.closed // started, and being prepared
    const closing = supervisor.close()
    slow.open()
    await expect(restarting).rejects.toThrow(/killed/)
    expect((await closing)?.id).toBe(0)
    expect(stopped.map((k) => k.id)).toEqual([0, 1])
  })

  it('once closed, a restart starts nothing, asked for or not', async () => {
    const { supervisor, started } = supervise()
    await supervisor.close()
    await expect(supervisor.restart()).rejects.toThrow(/killed/)
    await expect(supervisor.restart({ asked: true })).rejects.toThrow(/killed/)
    expect(started).toEqual([])
  })

  it('reaches a kernel whose connection dropped again, keeps it and tells nothing: not a restart', async () => {
    const reconnected: number[] = []
    const { supervisor, started } = supervise({
      reconnect: async (kernel) => {
        reconnected.push(kernel.id)
        kernel.alive = true
        return true
      },
    })
    supervisor.current.alive = false // the socket dropped; the kernel runs on
    const kernels = await Promise.all([supervisor.ready(), supervisor.ready()])
    expect(kernels.map((k) => k.id)).toEqual([0, 0])
    expect(reconnected).toEqual([0]) // once, for both requests
    expect(started).toEqual([])
    expect(supervisor.takeNotice()).toBeUndefined()
  })

  it('replaces a kernel that cannot be reached again, and tells the next cell why', async () => {
    const { supervisor, started, stopped } = supervise({ reconnect: async () => false })
    supervisor.current.die()
    expect((await supervisor.ready()).id).toBe(1)
    expect(started).toHaveLength(1)
    expect(stopped.map((k) => k.id)).toEqual([0]) // what the stopped one still held is freed
    expect(supervisor.takeNotice()).toMatch(/had stopped since the last cell \(kernel 0 exited\)/)
  })

  it('a failed reconnection is reported to the request, and starts no kernel', async () => {
    const { supervisor, started } = supervise({
      reconnect: async () => {
        throw new Error('server unreachable')
      },
    })
    supervisor.current.die()
    await expect(supervisor.ready()).rejects.toThrow('server unreachable')
    expect(started).toEqual([])
  })

  it('restarts a running kernel in place where the engine can; one that stopped is started anew', async () => {
    const inPlace: number[] = []
    const { supervisor, started, stopped } = supervise({
      restartInPlace: async (kernel) => {
        inPlace.push(kernel.id)
        return new FakeKernel(kernel.id + 100)
      },
    })
    expect((await supervisor.restart()).id).toBe(100)
    expect(inPlace).toEqual([0])
    expect(stopped).toEqual([]) // the same kernel on the server, restarted: nothing to stop
    supervisor.current.die()
    expect((await supervisor.restart()).id).toBe(1)
    expect(inPlace).toEqual([0])
    expect(stopped.map((k) => k.id)).toEqual([100])
    expect(started.map((k) => k.id)).toEqual([1])
  })

  it('a restart asked for does not count towards the limit, and is refused once the sandbox gave up', async () => {
    const { supervisor, started } = supervise({ restartLimit: 2 })
    for (let i = 0; i < 4; i++) await supervisor.restart({ asked: true })
    expect(started).toHaveLength(4)
    for (let i = 0; i < 2; i++) {
      supervisor.current.die()
      await supervisor.ready()
    }
    supervisor.current.die()
    await expect(supervisor.ready()).rejects.toThrow(/stopped 2 times in a row/)
    await expect(supervisor.restart({ asked: true })).rejects.toThrow(/no longer restarts it/)
    expect(started).toHaveLength(6)
  })

  it('a request that finds the kernel stopped after another replaced it uses the new one', async () => {
    let calls = 0
    const slow = gate()
    const { supervisor, started } = supervise({
      describe: async () => {
        calls++
        if (calls === 2) await slow.closed // the second request learns why only after the first replaced it
        return 'exited'
      },
    })
    supervisor.current.die()
    const second = (async () => {
      const first = supervisor.ready()
      const later = supervisor.ready()
      await first
      slow.open()
      return later
    })()
    expect((await second).id).toBe(1)
    expect(started).toHaveLength(1)
  })
})
