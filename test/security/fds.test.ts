/**
 * Hostile code, family: file descriptors. A host process may hold fds it inherited without
 * close-on-exec (a parent's pipe, a socket a supervisor passed on); bubblewrap and the zygote
 * hand on what they get, so the kernel must close them before code runs. A child Node process
 * gets a file on fd 200, opened by the shell that starts it, and lists /proc/self/fd inside a cell, on
 * both cold-start paths. Uses dist/ (built by `npm test`'s setup).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { isRoot } from './helpers.js'

const INDEX = resolve('dist/index.js')
const SCRIPT = `
import { readlinkSync } from 'node:fs'
const { LocalProvider, Sandbox } = await import(process.argv[1])
const host = readlinkSync('/proc/self/fd/200')
const provider = new LocalProvider({ poolSize: 0, coldStart: process.argv[2] })
const sandbox = await Sandbox.create({ provider })
const run = await sandbox.runCode(\`import os
fds = {}
for fd in os.listdir('/proc/self/fd'):
    try:
        fds[fd] = os.readlink('/proc/self/fd/' + fd)
    except OSError:
        pass
fds\`)
await sandbox.kill()
process.stdout.write(JSON.stringify({ host, inside: run.text, error: run.error?.value }))
process.exit(0)
`

function fdsInside(coldStart: string): Promise<{ host: string; inside: string; error?: string }> {
  // The shell opens a file of its own on fd 200 without close-on-exec, as a supervisor would.
  const marker = join(mkdtempSync(join(tmpdir(), 'analyst-fds-')), 'inherited')
  writeFileSync(marker, '')
  const child = spawn(
    '/bin/bash',
    [
      '-c',
      'exec 200<"$0"; exec "$1" --input-type=module -e "$2" "$3" "$4"',
      marker,
      process.execPath,
      SCRIPT,
      INDEX,
      coldStart,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk
  })
  return new Promise((resolvePromise, reject) => {
    child.once('exit', (code) => {
      rmSync(dirname(marker), { recursive: true, force: true })
      if (code === 0) resolvePromise(JSON.parse(out))
      else reject(new Error(`child exited ${code}: ${err}`))
    })
  })
}

describe('file descriptors', () => {
  for (const coldStart of isRoot ? ['spawn', 'fork'] : ['spawn']) {
    it(`a sandbox holds none of the host's inherited fds (${coldStart})`, async () => {
      const { host, inside, error } = await fdsInside(coldStart)
      expect(error).toBeUndefined()
      expect(host).toMatch(/analyst-fds-.*inherited$/)
      // The listing worked: the protocol's fds are there.
      for (const fd of ['0', '1', '2', '3', '4']) expect(inside).toContain(`'${fd}':`)
      // stdin is /dev/null (the zygote's own for a fork, opened once for every kernel it forks).
      expect(inside).toContain("'0': '/dev/null'")
      expect(inside).not.toContain(host)
    })
  }
})
