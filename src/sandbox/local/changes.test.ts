import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { ChangeTracker } from './changes.js'
import { at, DIR_FLAGS } from './folder-fd.js'

let root: string
let tracker: ChangeTracker
beforeEach(() => {
  // A tmpfs, as a sandbox's workspace is: thousands of files are written fast there.
  root = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'analyst-changes-'))
  tracker = new ChangeTracker(root, (parts) => {
    let fd = openSync(root, DIR_FLAGS)
    for (const part of parts) {
      const next = openSync(at(fd, part), DIR_FLAGS)
      closeSync(fd)
      fd = next
    }
    return fd
  })
})
afterEach(() => {
  tracker.close()
  rmSync(root, { recursive: true, force: true })
})

it('walks the workspace once, then reads only what had events', async () => {
  for (let folder = 0; folder < 4; folder++) {
    mkdirSync(join(root, `${folder}`))
    for (let file = 0; file < 500; file++) writeFileSync(join(root, `${folder}/${file}`), '')
  }
  expect((await tracker.changes()).size).toBe(2000)
  for (let cell = 0; cell < 5; cell++) {
    writeFileSync(join(root, `2/cell-${cell}`), 'x')
    expect([...(await tracker.changes()).keys()]).toEqual([`2/cell-${cell}`])
  }
  expect(tracker.walks).toBe(1)
})

it('walks again when the events may have overflowed the queue, and finds the same', async () => {
  mkdirSync(join(root, 'burst'))
  await tracker.changes()
  // More events than the kernel's queue holds (16,384 by default): some may be lost.
  for (let file = 0; file < 9000; file++) writeFileSync(join(root, `burst/${file}`), 'x')
  expect((await tracker.changes()).size).toBe(9000)
  expect(tracker.walks).toBe(2)
  writeFileSync(join(root, 'burst/one'), '')
  expect([...(await tracker.changes()).keys()]).toEqual(['burst/one'])
  expect(tracker.walks).toBe(2)
})
