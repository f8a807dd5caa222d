import { describe, expect, it } from 'vitest'
import { Turns, untilAborted } from './turns.js'

describe('Turns', () => {
  it('lets questions go one at a time, in the order they arrived', async () => {
    const turns = new Turns()
    const order: string[] = []
    const run = async (name: string) => {
      const turn = turns.take()
      await turn.ready
      order.push(`${name} start`)
      await new Promise((resolve) => setImmediate(resolve))
      order.push(`${name} end`)
      turn.release()
      return turn.queued
    }
    const queued = await Promise.all([run('a'), run('b'), run('c')])
    expect(order).toEqual(['a start', 'a end', 'b start', 'b end', 'c start', 'c end'])
    expect(queued).toEqual([false, true, true])
    expect(turns.pending).toBe(0)
  })

  it('a question that gives up its place while waiting does not let the next one pass those ahead', async () => {
    const turns = new Turns()
    const first = turns.take()
    const quitter = turns.take()
    const third = turns.take()
    let thirdRan = false
    void third.ready.then(() => {
      thirdRan = true
    })
    quitter.release() // gives up while the first still runs
    await new Promise((resolve) => setImmediate(resolve))
    expect(thirdRan).toBe(false)
    first.release()
    await third.ready
    expect(thirdRan).toBe(true)
    expect(turns.pending).toBe(1)
  })
})

describe('untilAborted', () => {
  it('rejects with the reason when the signal aborts first, and resolves otherwise', async () => {
    const controller = new AbortController()
    const never = new Promise<void>(() => {})
    const waiting = untilAborted(never, controller.signal)
    controller.abort(new Error('gone'))
    await expect(waiting).rejects.toThrow('gone')
    await expect(untilAborted(Promise.resolve(7), new AbortController().signal)).resolves.toBe(7)
  })
})
