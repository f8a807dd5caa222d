#!/usr/bin/env node
// Installs what Analyst needs and is missing, then builds: npm packages, the Debian packages of
// the sandbox (as root through apt-get; otherwise it prints the command), and dist/.
// Used by `npm test`, `npm run demo` and `npm run bench`. Dependency-free: it runs before npm install.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
// --test: also what only the tests need (a browser for the web UI, nbformat to validate notebooks,
// Jupyter Server, ipykernel and JupyterHub for the Jupyter engine, a PostgreSQL server for the
// store, replica and data source tests, a MariaDB server for the data source tests).
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
  xlrd: 'python3-xlrd',
  IPython: 'python3-ipython',
}
// Packages that only widen what Analyst reads (old .xls workbooks) or what cells may write
// (IPython's !command and %magic lines): set up goes on without them.
/** R's packages, by the folder each installs in R's site library. */
const R_PACKAGES = [
  ['IRkernel', 'r-cran-irkernel'],
  ['ggplot2', 'r-cran-ggplot2'],
  ['data.table', 'r-cran-data.table'],
  ['tidyverse', 'r-cran-tidyverse'],
]
const OPTIONAL = new Set(['python3-xlrd', 'python3-ipython', 'r-cran-tidyverse'])
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
  // R contexts (runCode(…, { language: 'r' }), --language r): R, the packages its kernel uses
  // (IRkernel brings repr, evaluate and jsonlite) and what analyses reach for. ~170 MB, ~35 s.
  const rLibrary = '/usr/lib/R/site-library'
  if (!existsSync('/usr/bin/Rscript')) missing.push('r-base-core')
  for (const [name, pkg] of R_PACKAGES) {
    if (!existsSync(join(rLibrary, name))) missing.push(pkg)
  }
  if (extra.has('--test')) {
    if (!existsSync('/usr/bin/chromium')) missing.push('chromium')
    const nbformat = spawnSync(PYTHON, ['-c', 'import nbformat'], { stdio: 'ignore' })
    if (nbformat.status !== 0) missing.push('python3-nbformat')
    // The Jupyter engine's tests start a real Jupyter Server (and JupyterHub) with an IPython kernel.
    // …and exports of sessions with sources re-run their sql() with SQLAlchemy and the usual drivers.
    for (const [module, pkg] of [
      ['jupyter_server', 'python3-jupyter-server'],
      ['ipykernel', 'python3-ipykernel'],
      ['sqlalchemy', 'python3-sqlalchemy'],
      ['psycopg2', 'python3-psycopg2'],
      ['pymysql', 'python3-pymysql'],
    ]) {
      if (spawnSync(PYTHON, ['-c', `import ${module}`], { stdio: 'ignore' }).status !== 0) missing.push(pkg)
    }
    // The template tests build real templates: mmdebstrap makes a Debian root, and a wheel of a
    // tiny package is made with the host's pip (setuptools and wheel as its build backend).
    if (!existsSync('/usr/bin/mmdebstrap')) missing.push('mmdebstrap')
    for (const [module, pkg] of [
      ['pip', 'python3-pip'],
      ['setuptools', 'python3-setuptools'],
      ['wheel', 'python3-wheel'],
    ]) {
      if (spawnSync(PYTHON, ['-c', `import ${module}`], { stdio: 'ignore' }).status !== 0) missing.push(pkg)
    }
    if (!existsSync('/usr/bin/jupyterhub')) missing.push('jupyterhub')
    const postgres = '/usr/lib/postgresql'
    const hasPostgres =
      existsSync(postgres) &&
      readdirSync(postgres).some((v) => existsSync(join(postgres, v, 'bin', 'initdb')))
    if (!hasPostgres) missing.push('postgresql')
    // The data sources' tests start a real MariaDB server (mariadb-install-db, mariadbd).
    if (!existsSync('/usr/sbin/mariadbd') || !existsSync('/usr/bin/mariadb-install-db'))
      missing.push('mariadb-server')
  }
  return missing
}

/** The distribution, for messages: PRETTY_NAME from /etc/os-release. */
function distributionName() {
  try {
    return readFileSync('/etc/os-release', 'utf8').match(/^PRETTY_NAME="?([^"\n]*)"?$/m)?.[1] ?? 'this system'
  } catch {
    return 'this system'
  }
}

/** Whether apt has the package: its candidate version, after apt-get update. */
function aptHas(name) {
  const policy = spawnSync('apt-cache', ['policy', name], { encoding: 'utf8' })
  const candidate = policy.stdout?.match(/Candidate:\s*(\S+)/)?.[1]
  return candidate !== undefined && candidate !== '(none)'
}

const missing = missingPackages()
if (missing.length > 0) {
  const hasApt = existsSync('/usr/bin/apt-get')
  if (!hasApt) {
    say(`Missing system packages (as Debian names them): ${missing.join(' ')}`)
    say(
      `${distributionName()} has no apt-get: install bubblewrap and, for /usr/bin/python3, the Python modules these packages hold, with its own package manager; then run this again.`,
    )
    process.exit(1)
  }
  if (process.getuid?.() === 0) {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
    run('apt-get', ['update'], { env })
    // Install what the distribution has; say what it lacks (and stop if Analyst needs it).
    const lacking = missing.filter((name) => !aptHas(name))
    for (const name of lacking) {
      say(
        OPTIONAL.has(name)
          ? `${distributionName()} has no package ${name}: going on without it (old .xls workbooks will not be readable; save them as .xlsx)`
          : `${distributionName()} has no package ${name}, which Analyst needs: install it from another source, or use Debian 12 or Ubuntu 22.04 or newer.`,
      )
    }
    if (lacking.some((name) => !OPTIONAL.has(name))) process.exit(1)
    const available = missing.filter((name) => !lacking.includes(name))
    if (available.length > 0) {
      run('apt-get', ['install', '-y', '--no-install-recommends', ...available], { env })
    }
  } else {
    say(`Missing system packages: ${missing.join(' ')}`)
    say(
      `Install them with: sudo sh -c 'apt-get update && apt-get install -y --no-install-recommends ${missing.join(' ')}'`,
    )
    process.exit(1)
  }
}

// 2. npm packages, when node_modules is missing or older than the lock file. Their install scripts
// (better-sqlite3's compile: one C file on one core, about a minute) run beside the build of dist/
// below, which needs none of them: on a fresh clone the two cores work at once, where `npm ci`
// compiled first and built after (its `prepare`).
const lock = join(root, 'package-lock.json')
const installed = join(root, 'node_modules', '.package-lock.json')
let rebuilt = Promise.resolve()
if (!existsSync(installed) || statSync(installed).mtimeMs < statSync(lock).mtimeMs) {
  run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'])
  say("npm rebuild (the dependencies' install scripts), beside the build")
  const rebuild = spawn('npm', ['rebuild', '--no-audit', '--no-fund'], { stdio: 'inherit', cwd: root })
  rebuilt = new Promise((resolve) =>
    rebuild.on('exit', (code) => {
      if (code === 0) return resolve()
      say('failed: npm rebuild')
      // The next run installs again rather than trusting a half-built node_modules.
      rmSync(installed, { force: true })
      process.exit(code ?? 1)
    }),
  )
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
await rebuilt
