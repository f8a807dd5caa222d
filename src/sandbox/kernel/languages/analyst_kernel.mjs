// Analyst's JavaScript kernel: one JavaScript or TypeScript context of a sandbox, started and
// spoken to by the Python kernel (analyst_languages.py), in the same jail and under the same limits.
//
// The host has already turned each cell into a script (src/sandbox/kernel/javascript.ts): types
// stripped, imports made dynamic (through __analyst_import, which resolves from the working
// folder), top-level declarations made globals so that they outlive the cell, and the value of the
// last expression returned as [value]. Requests, one JSON object a line, on stdin:
// {"type": "execute", "id", "code", "envs"}, {"type": "env", "envs"}. Messages, one JSON object a
// line, on the fd named by the first argument: ready, result, error, done. console.log writes to
// fd 1 and 2, which the Python kernel reads as the cell's output. SIGINT interrupts the cell.
import { writeSync } from 'node:fs'
import { builtinModules, createRequire } from 'node:module'
import { isAbsolute, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import { inspect } from 'node:util'
import { runInThisContext } from 'node:vm'

const MESSAGE_FD = Number(process.argv[2])
const TEXT_CAP = 1_000_000

function send(message) {
  writeSync(MESSAGE_FD, `${JSON.stringify(message)}\n`)
}

const builtins = new Set(builtinModules)

/** import() for code: builtins as they are, paths and packages from the working folder. */
function analystImport(specifier) {
  const name = String(specifier)
  if (name.startsWith('node:') || builtins.has(name) || /^(data|file|https?):/.test(name)) return import(name)
  if (name.startsWith('.') || isAbsolute(name))
    return import(pathToFileURL(resolve(process.cwd(), name)).href)
  try {
    const resolved = createRequire(resolve(process.cwd(), 'noop.js')).resolve(name)
    return import(pathToFileURL(resolved).href)
  } catch {
    return import(name)
  }
}
Object.defineProperty(globalThis, '__analyst_import', { value: analystImport, enumerable: false })

function text(value) {
  const shown = typeof value === 'string' ? `'${value}'` : inspect(value, { depth: 4, maxArrayLength: 200 })
  return shown.length > TEXT_CAP ? `${shown.slice(0, TEXT_CAP)}\n… [truncated]` : shown
}

function bundleOf(value) {
  const bundle = { 'text/plain': text(value) }
  // Rows of plain objects (what most code builds for a table): also as columns, as a DataFrame's data.
  if (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((row) => row && typeof row === 'object' && !Array.isArray(row))
  ) {
    const columns = {}
    for (const row of value.slice(0, 10_000)) for (const key of Object.keys(row)) columns[key] ??= []
    for (const key of Object.keys(columns))
      columns[key] = value.slice(0, 10_000).map((row) => row[key] ?? null)
    bundle['analyst/data'] = columns
  }
  return bundle
}

function errorOf(raised) {
  if (raised instanceof Error) {
    return {
      name: raised.name,
      value: raised.message,
      traceback: raised.stack ?? `${raised.name}: ${raised.message}`,
    }
  }
  return { name: 'Error', value: text(raised), traceback: `Uncaught ${text(raised)}` }
}

// Code outlives its cell (timers, promises nobody awaits): what they throw is printed, not fatal.
process.on('uncaughtException', (error) => process.stderr.write(`Uncaught ${errorOf(error).traceback}\n`))
process.on('unhandledRejection', (error) =>
  process.stderr.write(`Unhandled rejection: ${errorOf(error).traceback}\n`),
)

let count = 0
/** Rejects the running cell's wait when SIGINT comes while its code awaits something. */
let interruptCell
process.on('SIGINT', () => interruptCell?.())

function interrupted() {
  return { name: 'KeyboardInterrupt', value: 'the cell was interrupted', traceback: '' }
}

async function execute(request) {
  count++
  const saved = {}
  for (const [key, value] of Object.entries(request.envs ?? {})) {
    saved[key] = process.env[key]
    process.env[key] = String(value)
  }
  let error
  try {
    // breakOnSigint: SIGINT stops code that runs without awaiting (a loop) with an error.
    const running = runInThisContext(request.code, { filename: `cell-${count}.js`, breakOnSigint: true })
    const stopped = new Promise((_, reject) => {
      interruptCell = () => reject(Object.assign(new Error('interrupted'), { interrupted: true }))
    })
    const returned = await Promise.race([running, stopped])
    if (Array.isArray(returned) && returned.length === 1 && returned[0] !== undefined) {
      send({ type: 'result', id: request.id, main: true, bundle: bundleOf(returned[0]) })
    }
  } catch (raised) {
    const sigint = raised?.interrupted || raised?.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED'
    error = sigint ? interrupted() : errorOf(raised)
  } finally {
    interruptCell = undefined
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key]
      else process.env[key] = value
    }
  }
  if (error) send({ type: 'error', id: request.id, ...error })
  send({ type: 'done', id: request.id, count })
}

const requests = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY })
let queue = Promise.resolve()
requests.on('line', (line) => {
  if (!line.trim()) return
  const request = JSON.parse(line)
  if (request.type === 'execute') queue = queue.then(() => execute(request))
  else if (request.type === 'env') Object.assign(process.env, request.envs)
})
requests.on('close', () => process.exit(0)) // the Python kernel is gone
send({ type: 'ready', pid: process.pid, version: process.versions.node })
