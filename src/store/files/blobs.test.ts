/**
 * Blobs in a folder, where a writer is killed mid-blob: a real process (the built store) killed
 * with -9 leaves its temporary file, and the next start's sweep forgets it, never a live writer's.
 * The rest of what the store does is the conformance suite's (src/store/sqlite/store.test.ts).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Readable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import { pathToFileURL } from 'node:url'
import { afterEach, expect, it } from 'vitest'
import { inPidNamespace } from '../../test/support/pid-namespace.js'
import { FileBlobStore } from './blobs.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** The built store, for the processes these tests start and kill. */
const STORE = JSON.stringify(pathToFileURL(resolve('dist/store/files/blobs.js')).href)

/**
 * A script that puts a blob into dir with the built store and never ends it; killed: it kills
 * itself (SIGKILL) once its temporary file is there.
 */
function halfWriterScript(dir: string, killed = false) {
  return `
    const { FileBlobStore } = await import(${STORE})
    const { Readable } = await import('node:stream')
    const { readdirSync } = await import('node:fs')
    async function* half() {
      yield Buffer.from('half a blob')
      while (${killed} && !readdirSync(${JSON.stringify(dir)}).some((name) => name.endsWith('.part')))
        await new Promise((resolve) => setTimeout(resolve, 10))
      if (${killed}) process.kill(process.pid, 'SIGKILL')
      await new Promise(() => setInterval(() => {}, 1000))
    }
    await new FileBlobStore(${JSON.stringify(dir)}).put(Readable.from(half()))
  `
}

/** A process that puts a blob into dir and never ends it. */
function halfWriter(dir: string) {
  return spawn(process.execPath, ['--input-type=module', '-e', halfWriterScript(dir)], { stdio: 'inherit' })
}

it("forgets the temporary file of a writer killed mid-blob at the next sweep, never a live writer's", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'analyst-blobs-'))
  dirs.push(dir)
  const parts = () => readdirSync(dir).filter((name) => name.endsWith('.part'))
  const store = new FileBlobStore(dir)
  let release = () => {}
  const held = new Promise<void>((resolve) => {
    release = resolve
  })
  async function* slow() {
    yield Buffer.from('live ')
    await held
    yield Buffer.from('blob')
  }
  const live = store.put(Readable.from(slow()))
  const child = halfWriter(dir)
  const exited = new Promise((resolve) => child.once('exit', resolve))
  try {
    await expect.poll(parts, { timeout: 20_000 }).toHaveLength(2)
  } finally {
    child.kill('SIGKILL')
    await exited
  }
  expect(await store.forgetPartialBlobs(10)).toBe(1)
  expect(parts()).toHaveLength(1)
  release()
  const stored = await live
  expect((await buffer((await store.get(stored.sha256)) as Readable)).toString()).toBe('live blob')
  expect(parts()).toEqual([])
  expect(await store.forgetPartialBlobs(10)).toBe(0)
})

it("forgets a dead writer's temporary file when another process has been given its pid", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'analyst-blobs-'))
  dirs.push(dir)
  const parts = () => readdirSync(dir).filter((name) => name.endsWith('.part'))
  const writer = inPidNamespace(halfWriterScript(dir, true))
  await new Promise((resolve) => writer.once('exit', resolve)) // and with it, the namespace
  expect(parts()).toHaveLength(1)
  expect(parts()[0]).toMatch(new RegExp(`^\\.${hostname()}\\.2[.-]`)) // the writer was pid 2
  // The next server, in a namespace of its own, is pid 2 again.
  const sweeper = inPidNamespace(
    `
    const { FileBlobStore } = await import(${STORE})
    const forgotten = await new FileBlobStore(${JSON.stringify(dir)}).forgetPartialBlobs(10)
    process.stdout.write(JSON.stringify({ pid: process.pid, forgotten }))
  `,
    'pipe',
  )
  const output = await buffer(sweeper.stdout as Readable)
  expect({ swept: JSON.parse(output.toString()), left: parts() }).toEqual({
    swept: { pid: 2, forgotten: 1 },
    left: [],
  })
})
