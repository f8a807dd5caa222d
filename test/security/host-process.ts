/**
 * A second host process for cases where the host itself dies: Analyst's sources, transpiled to
 * plain JavaScript in a temporary folder (vitest's loader cannot be used outside the test worker),
 * run by `node` with one sandbox, and killed with SIGKILL so that no exit hook runs.
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { transform } from 'sucrase'
import { releaseSandboxDir } from '../../src/sandbox/local/runtime.js'
import { waitFor } from '../support/wait.js'
import { killLeftovers, processesOf, REPO } from './helpers.js'

const HOST_SCRIPT = `
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { LocalProvider, Sandbox } from './src/index.js'
import { getRuntime } from './src/sandbox/local/runtime.js'

const sandbox = await Sandbox.create({ provider: new LocalProvider({ poolSize: 0 }) })
const dir = join(getRuntime().own, 'sb-' + sandbox.sandboxId)
let cgroups = []
try {
  cgroups = readFileSync(join(dir, 'cgroups'), 'utf8').split('\\n').filter(Boolean)
} catch {}
// The code is hostile: run it only in the jail (PID 1 is bubblewrap, or the zygote's init when forked).
const jailed = await sandbox.runCode("args = open('/proc/1/cmdline', 'rb').read().split(b'\\\\0')\\n'bwrap' if b'/opt/analyst/analyst_zygote.py' in args else args[0].decode()")
if (jailed.text !== "'bwrap'") {
  await sandbox.kill()
  process.stderr.write('not jailed: ' + jailed.text + '\\n')
  process.exit(3)
}
const execution = await sandbox.runCode(readFileSync(0, 'utf8'))
process.stdout.write(JSON.stringify({
  uid: statSync(join(dir, 'work')).uid,
  dir,
  cgroups,
  stdout: execution.logs.stdout.join(''),
  error: execution.error ?? null,
}) + '\\n')
setInterval(() => {}, 1000) // stays up until it is killed
`

/** Transpiles src/ (all but the web UI and the tests) into a folder that `node` can run. */
export function buildStandaloneHost(): string {
  const out = mkdtempSync(join(tmpdir(), 'analyst-hostile-host-'))
  const source = join(REPO, 'src')
  const emit = (path: string) => {
    const target = join(out, 'src', path.slice(source.length + 1))
    mkdirSync(dirname(target), { recursive: true })
    // Python, R and JavaScript kernels, recipes: as they are.
    if (!path.endsWith('.ts')) return copyFileSync(path, target)
    // Types stripped, imports kept as written (verbatimModuleSyntax), the rest left to Node: sucrase
    // (the TypeScript kernel's) does all of src in a fifth of the CPU typescript's transpileModule
    // took (2.6 against 12 s, in each of the three projects that run this file).
    const { code } = transform(readFileSync(path, 'utf8'), {
      transforms: ['typescript'],
      keepUnusedImports: true,
      disableESTransforms: true,
      filePath: basename(path),
    })
    writeFileSync(target.replace(/\.ts$/, '.js'), code)
  }
  const copy = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        if (entry.name !== '__pycache__' && path !== join(source, 'web')) copy(path)
      } else if (!/\.(test|case)\.ts$/.test(entry.name)) {
        emit(path)
      }
    }
  }
  // All of src, so that whatever the sandbox's modules import is there.
  copy(source)
  writeFileSync(join(out, 'package.json'), '{ "type": "module" }\n')
  writeFileSync(join(out, 'host.mjs'), HOST_SCRIPT)
  symlinkSync(join(REPO, 'node_modules'), join(out, 'node_modules'))
  return out
}

export interface HostProcessReport {
  uid: number
  dir: string
  cgroups: string[]
  stdout: string
  error: { name: string; value: string } | null
}

/** A node process with one sandbox that has run `code`; it stays up until killed. */
export async function startHostProcess(build: string, code: string) {
  const child: ChildProcess = spawn(process.execPath, ['host.mjs'], {
    cwd: build,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TMPDIR: tmpdir() },
  })
  child.stdin?.end(code)
  let output = ''
  let errors = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    errors += chunk.toString()
  })
  const report = await new Promise<HostProcessReport>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`host process did not report: ${errors}`)), 45_000)
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const line = output.split('\n').find((text) => text.startsWith('{'))
      if (line && output.includes('\n')) {
        clearTimeout(timer)
        resolve(JSON.parse(line) as HostProcessReport)
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`host process exited (${code}) before reporting: ${errors}`))
    })
  })
  return { child, report }
}

/** Kills the host process as an OOM killer would: SIGKILL, no exit hooks. */
export async function killAbruptly(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

/** Removes what a killed host process left: its sandbox's processes, mount, cgroups, folder, uid lock. */
export async function cleanUpAfterHost(report: HostProcessReport) {
  killLeftovers(report.uid)
  await waitFor(() => processesOf(report.uid).length === 0, {
    what: `the processes of uid ${report.uid} to end after SIGKILL`,
  })
  const owner = dirname(report.dir)
  if (existsSync(report.dir)) releaseSandboxDir(report.dir)
  rmSync(owner, { recursive: true, force: true })
  const lock = join(dirname(owner), 'uids', String(report.uid))
  try {
    if (readFileSync(lock, 'utf8') === basename(owner)) rmSync(lock, { force: true })
  } catch {
    // no lock left
  }
}
