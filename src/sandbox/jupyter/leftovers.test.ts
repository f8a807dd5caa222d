/**
 * The records of the kernels Analyst processes started: a kernel is a leftover once the process
 * that started it is gone, even when a later process (a restarted container's server) has its pid;
 * never while that process runs.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Readable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import { pathToFileURL } from 'node:url'
import { afterEach, expect, it } from 'vitest'
import { inPidNamespace } from '../../test/support/pid-namespace.js'
import { KernelRecords } from './leftovers.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** The built module, for the processes these tests start. */
const LEFTOVERS = JSON.stringify(pathToFileURL(resolve('dist/sandbox/jupyter/leftovers.js')).href)
const URL = 'http://127.0.0.1:8888/'

it("finds a dead process's kernel when another process has been given its pid", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'analyst-records-'))
  dirs.push(dir)
  const records = (script: string) => `
    const { KernelRecords } = await import(${LEFTOVERS})
    const records = new KernelRecords(${JSON.stringify(dir)})
    ${script}
  `
  const starter = inPidNamespace(records(`records.add(${JSON.stringify(URL)}, 'kernel-1')`))
  await new Promise((resolve) => starter.once('exit', resolve)) // and with it, the namespace
  expect(readdirSync(dir)).toEqual(['kernel-1.json'])
  // The next server, in a namespace of its own, is pid 2 again.
  const next = inPidNamespace(
    records(`
      const found = records.leftovers(${JSON.stringify(URL)}).map((record) => record.kernelId)
      process.stdout.write(JSON.stringify({ pid: process.pid, found }))
    `),
    'pipe',
  )
  expect(JSON.parse((await buffer(next.stdout as Readable)).toString())).toEqual({
    pid: 2,
    found: ['kernel-1'],
  })
})

it('keeps the kernels of a running process, and of this one', () => {
  const dir = mkdtempSync(join(tmpdir(), 'analyst-records-'))
  dirs.push(dir)
  const records = new KernelRecords(dir)
  records.add(URL, 'kernel-1')
  expect(records.leftovers(URL)).toEqual([])
  expect(records.leftovers('http://127.0.0.1:9999/')).toEqual([]) // another server's are not asked about
  records.remove('kernel-1')
  expect(readdirSync(dir)).toEqual([])
  // A record of an Analyst before the mark names the pid alone: this process's, then one that is gone.
  const older = (pid: number) =>
    writeFileSync(
      join(dir, 'older.json'),
      JSON.stringify({
        url: URL,
        kernelId: 'older',
        pid,
        host: hostname(),
        startedAt: new Date().toISOString(),
      }),
    )
  older(process.pid)
  expect(records.leftovers(URL)).toEqual([])
  older(2 ** 22 + 1) // above the largest pid Linux gives (pid_max's limit)
  expect(records.leftovers(URL).map((record) => record.kernelId)).toEqual(['older'])
})
