import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ownerTag } from '../sandbox/local/runtime.js'
import { holdLock } from './lock.js'

describe('holdLock', () => {
  let dir: string
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'analyst-lock-'))
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('lets one holder in at a time: the second waits until the first releases', async () => {
    const lock = join(dir, 'base.lock')
    const release = await holdLock(lock)
    expect(readFileSync(join(lock, 'owner'), 'utf8')).toBe(ownerTag)
    let second = false
    const waiting = holdLock(lock).then((releaseSecond) => {
      second = true
      return releaseSecond
    })
    await new Promise((resolve) => setTimeout(resolve, 700))
    expect(second).toBe(false)
    release()
    ;(await waiting)()
    expect(second).toBe(true)
  })

  it('takes over the lock of a process that died holding it', async () => {
    const lock = join(dir, 'base.lock')
    mkdirSync(lock)
    // A pid that cannot be running: its /proc entry is missing, so the holder is gone.
    writeFileSync(join(lock, 'owner'), '2147483646-1')
    const release = await holdLock(lock)
    expect(readFileSync(join(lock, 'owner'), 'utf8')).toBe(ownerTag)
    release()
  })

  it('stops waiting when the build is cancelled', async () => {
    const lock = join(dir, 'base.lock')
    const release = await holdLock(lock)
    const controller = new AbortController()
    const waiting = holdLock(lock, controller.signal)
    controller.abort()
    await expect(waiting).rejects.toThrow(/abort/i)
    release()
  })
})
