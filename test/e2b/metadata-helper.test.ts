/**
 * The host's long-running Python that reads and sets E2B's file metadata (user.e2b.* extended
 * attributes): answers matched to their requests, failures that leave it running, no descriptor
 * kept from one request to the next, a new one after it dies, and links still refused.
 */
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findPython } from '../../src/python.js'
import { metadataOf } from '../../src/sandbox/local/xattrs.js'

let python: string
let root: string
beforeAll(async () => {
  python = (await findPython()).executable
  root = mkdtempSync(join(tmpdir(), 'analyst-xattrs-'))
  mkdirSync(join(root, 'folder'))
  for (let i = 0; i < 40; i++) writeFileSync(join(root, 'folder', `f${i}.txt`), String(i))
})
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** This process's children running the helper (their command line carries its attribute prefix). */
function helperPids(): number[] {
  const children = readdirSync(`/proc/${process.pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${process.pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean),
  )
  return children.map(Number).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('user.e2b.')
    } catch {
      return false
    }
  })
}

async function until<T>(what: () => T | undefined, deadlineMs = 10_000): Promise<T> {
  const end = Date.now() + deadlineMs
  for (;;) {
    const value = what()
    if (value !== undefined) return value
    if (Date.now() > end) throw new Error('not reached before the deadline')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('the metadata helper', () => {
  it('answers many requests at once, each with its own file, from one process', async () => {
    const folder = { base: root, dirs: ['folder'] }
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        metadataOf(python, { ...folder, names: [], set: { [`f${i}.txt`]: { n: String(i) } } }),
      ),
    )
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => metadataOf(python, { ...folder, names: [`f${i}.txt`] })),
    )
    answers.forEach((answer, i) => {
      expect(answer).toEqual({ [`f${i}.txt`]: { n: String(i) } })
    })
    expect(helperPids()).toHaveLength(1)
  })

  it('says what failed and keeps answering, with no descriptor left open between requests', async () => {
    await expect(metadataOf(python, { base: root, dirs: ['nothing-here'], names: ['a'] })).rejects.toThrow(
      /could not be read: FileNotFoundError/,
    )
    await expect(
      metadataOf(python, { base: root, dirs: ['folder'], names: [], set: { 'missing.txt': { a: 'b' } } }),
    ).rejects.toThrow(/could not be set: FileNotFoundError/)
    const [pid] = helperPids()
    const open = () => readdirSync(`/proc/${pid}/fd`).length
    const before = open()
    for (let i = 0; i < 100; i++) {
      await metadataOf(python, { base: root, dirs: ['folder'], names: ['f1.txt'] })
      await metadataOf(python, { base: root, dirs: ['nothing-here'], names: [] }).catch(() => {})
    }
    expect(open()).toBe(before)
    expect(helperPids()).toEqual([pid])
  })

  it('does not follow a link on the way to the folder or to the file it sets', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'analyst-xattrs-outside-'))
    writeFileSync(join(outside, 'secret.txt'), 's')
    symlinkSync(outside, join(root, 'link'))
    symlinkSync(join(outside, 'secret.txt'), join(root, 'folder', 'secret-link'))
    try {
      await expect(metadataOf(python, { base: root, dirs: ['link'], names: ['secret.txt'] })).rejects.toThrow(
        /could not be read/,
      )
      await expect(
        metadataOf(python, { base: root, dirs: ['folder'], names: [], set: { 'secret-link': { a: 'b' } } }),
      ).rejects.toThrow(/could not be set/)
    } finally {
      rmSync(outside, { recursive: true, force: true })
    }
  })

  it('is started again when it dies', async () => {
    const [pid] = await until(() => (helperPids().length === 1 ? helperPids() : undefined))
    process.kill(pid as number, 'SIGKILL')
    await until(() => (helperPids().includes(pid as number) ? undefined : true))
    const answer = await metadataOf(python, { base: root, dirs: ['folder'], names: ['f2.txt'] })
    expect(answer).toEqual({ 'f2.txt': { n: '2' } })
    const [next] = helperPids()
    expect(next).toBeDefined()
    expect(next).not.toBe(pid)
  })
})
