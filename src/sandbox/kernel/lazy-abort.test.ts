import { describe, expect, it } from 'vitest'
import { lazyAbort } from './backend.js'

// A cell's abort is made only when a query asks for it: it must say what an AbortController made
// at the cell's start would have said, whenever it is asked.
describe("a cell's lazy abort", () => {
  it('made after the cell was stopped: aborted already, with the first reason', () => {
    const abort = lazyAbort()
    const first = new Error('stopped')
    abort.abort(first)
    abort.abort(new Error('the cell ended'))
    expect(abort.controller.signal.aborted).toBe(true)
    expect(abort.controller.signal.reason).toBe(first)
  })

  it('made while the cell runs: its listeners hear the abort, once, with its reason', () => {
    const abort = lazyAbort()
    const heard: unknown[] = []
    abort.controller.signal.addEventListener('abort', () => heard.push(abort.controller.signal.reason))
    expect(abort.controller.signal.aborted).toBe(false)
    const ended = new Error('the cell ended')
    abort.abort(ended)
    abort.abort(new Error('again'))
    expect(heard).toEqual([ended])
  })

  it('stopped without a reason: an AbortError, as abort() gives', () => {
    const abort = lazyAbort()
    abort.abort()
    expect((abort.controller.signal.reason as Error).name).toBe('AbortError')
  })
})
