import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../../test/support/wait.js'
import type { FolderWatch, WatchEvent } from '../backend.js'
import { watchFolder } from './watch.js'
import { Workspace } from './workspace.js'

describe('watchFolder', () => {
  let root: string
  let work: string
  let outside: string
  let workspace: Workspace
  let watch: FolderWatch | undefined
  let events: string[]
  const onEvent = (event: WatchEvent) => void events.push(`${event.type}:${event.name}`)
  const seen = (event: string) => waitFor(() => events.includes(event), { what: `${event} among ${events}` })

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'analyst-watch-'))
    work = join(root, 'work')
    outside = join(root, 'outside')
    mkdirSync(work)
    mkdirSync(join(root, 'data'))
    mkdirSync(outside)
    workspace = new Workspace(work, join(root, 'data'))
    events = []
  })
  afterEach(() => {
    watch?.stop()
    rmSync(root, { recursive: true, force: true })
  })

  it("tells create, write, chmod, rename and remove apart, as envd's inotify events", async () => {
    writeFileSync(join(work, 'old.txt'), 'x')
    watch = watchFolder(workspace, '.', { recursive: false, onEvent })
    writeFileSync(join(work, 'a.txt'), 'one')
    await seen('create:a.txt')
    await seen('write:a.txt')
    chmodSync(join(work, 'a.txt'), 0o600)
    await seen('chmod:a.txt')
    renameSync(join(work, 'a.txt'), join(work, 'b.txt'))
    await seen('rename:a.txt')
    await seen('create:b.txt')
    unlinkSync(join(work, 'b.txt'))
    await seen('remove:b.txt')
    expect(events.filter((e) => e.endsWith('old.txt'))).toEqual([])
    expect(events).not.toContain('remove:a.txt')
  })

  it('follows subfolders, the ones made later too, only when recursive', async () => {
    mkdirSync(join(work, 'sub'))
    watch = watchFolder(workspace, '.', { recursive: true, onEvent })
    writeFileSync(join(work, 'sub/in.txt'), '1')
    await seen('create:sub/in.txt')
    mkdirSync(join(work, 'new/deeper'), { recursive: true })
    writeFileSync(join(work, 'new/deeper/f.txt'), '2')
    await seen('create:new')
    await seen('create:new/deeper/f.txt')
    watch.stop()
    events = []
    watch = watchFolder(workspace, '.', { recursive: false, onEvent })
    writeFileSync(join(work, 'sub/other.txt'), '3')
    writeFileSync(join(work, 'top.txt'), '4')
    await seen('create:top.txt')
    expect(events.filter((e) => e.includes('sub/'))).toEqual([])
  })

  it('never watches through a link that code planted, before or after it starts', async () => {
    symlinkSync(outside, join(work, 'planted'))
    mkdirSync(join(work, 'real'))
    watch = watchFolder(workspace, '.', { recursive: true, onEvent })
    rmSync(join(work, 'real'), { recursive: true })
    symlinkSync(outside, join(work, 'real'))
    await seen('create:real')
    writeFileSync(join(outside, 'secret.txt'), 'host')
    writeFileSync(join(work, 'marker.txt'), 'after')
    await seen('create:marker.txt')
    expect(events.filter((e) => e.includes('secret'))).toEqual([])
    expect(() => watchFolder(workspace, 'planted', { recursive: true, onEvent })).toThrow(/link/)
    expect(() => watchFolder(workspace, 'missing', { recursive: true, onEvent })).toThrow(/no such folder/)
  })
})
