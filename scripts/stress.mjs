#!/usr/bin/env node
// `npm run test:stress [-- --runs N]`: the whole suite, N times in a row (5 by default), in a fresh
// clone of the committed HEAD, while two busy processes (`yes > /dev/null`) load both cores, as on
// a shared CI machine. Stops at the first failing run. Tests that hold only on a quiet machine fail
// here. The busy processes and the clone are always removed, also on Ctrl-C.
// Dependency-free: it only needs git and npm.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname

function usage(message) {
  process.stderr.write(`${message}\nUsage: npm run test:stress -- [--runs N] [--busy N]\n`)
  process.exit(2)
}

function parse(argv) {
  const options = { runs: 5, busy: 2 }
  for (let i = 0; i < argv.length; i++) {
    const [name, inline] = argv[i].split('=', 2)
    const key = { '--runs': 'runs', '--busy': 'busy' }[name]
    if (!key) usage(`Unknown option: ${argv[i]}`)
    const value = Number(inline ?? argv[++i])
    if (!Number.isInteger(value) || value < (key === 'runs' ? 1 : 0)) usage(`${name} takes a whole number`)
    options[key] = value
  }
  return options
}

const options = parse(process.argv.slice(2))
const say = (message) => process.stderr.write(`[stress] ${message}\n`)
const seconds = (ms) => `${(ms / 1000).toFixed(0)} s`

const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' })
if (head.status !== 0) usage(`Not a git repository: ${root}`)
const dirty = spawnSync('git', ['status', '--porcelain'], { cwd: root, encoding: 'utf8' }).stdout.trim()
if (dirty) say('uncommitted changes are not tested: the clone has only the committed HEAD')

const work = mkdtempSync(join(tmpdir(), 'analyst-stress-'))
const clone = join(work, 'analyst')
const busy = []
let suite

const running = (child) => child && child.exitCode === null && child.signalCode === null

/** Ends a child's whole process group (each child was started in its own), by its id. */
function signalGroup(child, signal) {
  try {
    process.kill(-child.pid, signal)
  } catch {
    // already gone
  }
}

async function cleanUp() {
  for (const child of busy) if (running(child)) signalGroup(child, 'SIGKILL')
  if (running(suite)) {
    // SIGTERM first, so that the test workers end their sandboxes; then SIGKILL what is left.
    signalGroup(suite, 'SIGTERM')
    const deadline = Date.now() + 10_000
    while (running(suite) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
    signalGroup(suite, 'SIGKILL')
  }
  rmSync(work, { recursive: true, force: true })
}

let stopping = false
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, async () => {
    if (stopping) return
    stopping = true
    say(`${signal}: stopping the suite and the busy processes, removing the clone`)
    await cleanUp()
    process.exit(130)
  })
}

function run(command, args, cwd, env = process.env) {
  return new Promise((resolve) => {
    suite = spawn(command, args, { cwd, env, stdio: 'inherit', detached: true })
    suite.once('error', (error) => resolve({ code: 1, error }))
    suite.once('exit', (code, signal) => resolve({ code: code ?? 1, signal }))
  })
}

const results = []
let failed = false
try {
  say(`cloning ${head.stdout.trim()} into ${clone}`)
  const cloned = await run('git', ['clone', '--quiet', root, clone], work)
  if (cloned.code !== 0) throw new Error('git clone failed')
  for (let i = 0; i < options.busy; i++) {
    busy.push(spawn('yes', [], { stdio: ['ignore', 'ignore', 'ignore'], detached: true }))
  }
  say(`${options.busy} busy processes (yes > /dev/null): ${busy.map((child) => child.pid).join(', ')}`)
  for (let i = 1; i <= options.runs; i++) {
    say(`run ${i} of ${options.runs}: npm test`)
    const started = Date.now()
    // The interrupt race test at its full count here (npm test alone runs fewer cells).
    const { code, signal } = await run('npm', ['test'], clone, {
      ...process.env,
      ANALYST_TEST_INTERRUPTS: '2000',
    })
    const ms = Date.now() - started
    if (stopping) break
    results.push({ run: i, ms, ok: code === 0 })
    say(`run ${i}: ${code === 0 ? 'passed' : `FAILED (${signal ?? `exit ${code}`})`} in ${seconds(ms)}`)
    if (code !== 0) {
      failed = true
      break
    }
  }
} catch (error) {
  failed = true
  say(String(error.message ?? error))
} finally {
  if (!stopping) await cleanUp()
}
// Stopped by a signal: its handler cleans up and exits.
if (stopping) await new Promise(() => {})

process.stdout.write('\nrun  result  duration\n')
for (const { run: i, ok, ms } of results) {
  process.stdout.write(`${String(i).padEnd(5)}${(ok ? 'passed' : 'FAILED').padEnd(8)}${seconds(ms)}\n`)
}
const passed = results.filter((result) => result.ok).length
process.stdout.write(
  `${passed} of ${options.runs} runs passed under load (${options.busy} busy processes)${failed ? '; stopped at the first failure' : ''}\n`,
)
process.exit(failed ? 1 : 0)
