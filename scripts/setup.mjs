#!/usr/bin/env node
// Installs what Analyst needs and is missing, then builds: npm packages, the Debian packages of
// the sandbox (as root through apt-get; otherwise it prints the command), and dist/.
// Used by `npm test`, `npm run demo` and `npm run bench`. Dependency-free: it runs before npm install.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
// --test: also what only the tests need (a browser for the web UI, nbformat to validate notebooks,
// a PostgreSQL server for the store and replica tests).
const extra = new Set(process.argv.slice(2))

function say(message) {
  process.stderr.write(`[setup] ${message}\n`)
}

function run(command, args, options = {}) {
  say(`${command} ${args.join(' ')}`)
  const result = spawnSync(command, args, { stdio: 'inherit', cwd: root, ...options })
  if (result.status !== 0) {
    say(`failed: ${command} ${args.join(' ')}`)
    process.exit(result.status ?? 1)
  }
}

const [major] = process.versions.node.split('.').map(Number)
if (major < 20) {
  say(`Node ${process.versions.node} is too old: Analyst needs Node 20 or newer.`)
  process.exit(1)
}

// 1. Debian packages the sandbox needs.
const PYTHON = '/usr/bin/python3'
const MODULE_PACKAGES = {
  pandas: 'python3-pandas',
  numpy: 'python3-numpy',
  matplotlib: 'python3-matplotlib',
  scipy: 'python3-scipy',
  openpyxl: 'python3-openpyxl',
  seaborn: 'python3-seaborn',
  sklearn: 'python3-sklearn',
  statsmodels: 'python3-statsmodels',
}
function missingPackages() {
  const missing = []
  const hasBwrap = spawnSync('sh', ['-c', 'command -v bwrap'], { stdio: 'ignore' }).status === 0
  if (!hasBwrap) missing.push('bubblewrap')
  const probe = `import importlib.util as u, json; print(json.dumps([m for m in ${JSON.stringify(Object.keys(MODULE_PACKAGES))} if u.find_spec(m) is None]))`
  let modules = Object.keys(MODULE_PACKAGES)
  if (existsSync(PYTHON)) {
    try {
      modules = JSON.parse(execFileSync(PYTHON, ['-c', probe], { encoding: 'utf8' }))
    } catch {
      // no usable interpreter: install them all
    }
  }
  missing.push(...modules.map((name) => MODULE_PACKAGES[name]))
  if (extra.has('--test')) {
    if (!existsSync('/usr/bin/chromium')) missing.push('chromium')
    const nbformat = spawnSync(PYTHON, ['-c', 'import nbformat'], { stdio: 'ignore' })
    if (nbformat.status !== 0) missing.push('python3-nbformat')
    const postgres = '/usr/lib/postgresql'
    const hasPostgres =
      existsSync(postgres) &&
      readdirSync(postgres).some((v) => existsSync(join(postgres, v, 'bin', 'initdb')))
    if (!hasPostgres) missing.push('postgresql')
  }
  return missing
}

const missing = missingPackages()
if (missing.length > 0) {
  const command = `apt-get update && apt-get install -y --no-install-recommends ${missing.join(' ')}`
  if (process.getuid?.() === 0 && existsSync('/usr/bin/apt-get')) {
    run('sh', ['-c', command], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
  } else {
    say(`Missing system packages: ${missing.join(' ')}`)
    say(`Install them with: sudo sh -c '${command}'`)
    process.exit(1)
  }
}

// 2. npm packages, when node_modules is missing or older than the lock file.
const lock = join(root, 'package-lock.json')
const installed = join(root, 'node_modules', '.package-lock.json')
if (!existsSync(installed) || statSync(installed).mtimeMs < statSync(lock).mtimeMs) {
  run('npm', ['ci', '--no-audit', '--no-fund'])
}

// 3. dist/, when any source file is newer than the last build.
function newest(dir) {
  let latest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs)
  }
  return latest
}
const built = join(root, 'dist', 'index.js')
if (!existsSync(built) || statSync(built).mtimeMs < newest(join(root, 'src'))) {
  run('npm', ['run', 'build', '--silent'])
}
