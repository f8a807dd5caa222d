/**
 * The npm package as a user gets it: `npm pack` of the built tree, `npm install -g` of the
 * tarball into a prefix of its own (production dependencies only, from the registry or npm's
 * cache), then the installed `analyst` run from another folder: doctor, a pandas cell in a real
 * jail, and serve. Every entry point of the package is imported there too, with nothing but the
 * production dependencies installed, so a devDependency used at run time fails here.
 */
import { spawn, spawnSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { builtinModules } from 'node:module'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../support/wait.js'

const ROOT = resolve('.')
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  files: string[]
  exports: Record<string, unknown>
  dependencies: Record<string, string>
  peerDependencies: Record<string, string>
  peerDependenciesMeta: Record<string, { optional?: boolean }>
}

let dir: string
let prefix: string
let installed: string
let packed: string[]
/** The installed command's environment: a home of its own, nothing of the project's. */
let env: NodeJS.ProcessEnv

function analyst(args: string[], cwd: string) {
  const result = spawnSync(join(prefix, 'bin', 'analyst'), args, {
    cwd,
    env,
    encoding: 'utf8',
    timeout: 180_000,
  })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-package-'))
  prefix = join(dir, 'prefix')
  // --ignore-scripts: pack the dist/ that `npm test` built; `prepare` would rebuild it under the
  // feet of the other test files that run the built CLI.
  const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
    cwd: ROOT,
    encoding: 'utf8',
  })
  expect(pack.status, pack.stderr).toBe(0)
  const [info] = JSON.parse(pack.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>
  if (!info) throw new Error(`npm pack printed no package: ${pack.stdout}`)
  packed = info.files.map((file) => file.path)
  const prebuilds = join(dir, 'prebuilds')
  packPrebuild(prebuilds)
  const install = spawnSync(
    'npm',
    [
      'install',
      '--global',
      '--prefix',
      prefix,
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      join(dir, info.filename),
    ],
    {
      cwd: dir,
      encoding: 'utf8',
      env: {
        ...process.env,
        npm_config_update_notifier: 'false',
        npm_config_better_sqlite3_local_prebuilds: prebuilds,
      },
    },
  )
  expect(install.status, `${install.stdout}\n${install.stderr}`).toBe(0)
  installed = join(prefix, 'lib', 'node_modules', 'analyst')
  const home = join(dir, 'home')
  mkdirSync(home)
  env = { PATH: process.env.PATH, HOME: home, ANALYST_HOME: join(home, '.analyst'), NO_COLOR: '1' }
}, 900_000)

/**
 * better-sqlite3's prebuilt binary, as a user with GitHub in reach gets it (prebuild-install takes
 * it from this folder as a "local prebuild"), made from the one `npm ci` built here. Without it,
 * prebuild-install's download fails here and SQLite is compiled again: most of the install's time.
 */
function packPrebuild(folder: string): void {
  const pkg = join(ROOT, 'node_modules', 'better-sqlite3')
  const { version } = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as { version: string }
  mkdirSync(folder)
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`
  const tar = spawnSync('tar', ['-czf', join(folder, name), '-C', pkg, 'build/Release/better_sqlite3.node'], {
    encoding: 'utf8',
  })
  expect(tar.status, tar.stderr).toBe(0)
}

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** Every .js file under a folder. */
function scripts(folder: string): string[] {
  return readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.js'))
    .map((name) => join(folder, name))
}

/** The packages a module imports, statically or with import('literal'). */
function importedPackages(source: string): string[] {
  const specifiers = [
    ...source.matchAll(/^\s*(?:import|export)\s[^'"]*?\sfrom\s*['"]([^'"]+)['"]/gm),
    ...source.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
    ...source.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((match) => match[1] as string)
  return specifiers
    .filter(
      (s) =>
        !s.startsWith('.') && !s.startsWith('node:') && !builtinModules.includes(s.split('/')[0] as string),
    )
    .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : (s.split('/')[0] as string)))
}

describe('the npm package', () => {
  it('holds the kernel, the web UI and the compiled code, and no test fakes or source maps', () => {
    for (const path of [
      'dist/cli/bin.js',
      'dist/sandbox/kernel/python/analyst_kernel.py',
      'dist/sandbox/local/python/analyst_zygote.py',
      'dist/sandbox/python/analyst_data.py',
      'dist/pylib/analyst_compat.py',
      'dist/sandbox/jupyter/prelude.py',
      'dist/web/index.html',
      'dist/store/sql/schema.js',
    ]) {
      expect(packed).toContain(path)
    }
    expect(packed.some((path) => path.startsWith('dist/web/assets/'))).toBe(true)
    expect(packed.filter((path) => path.startsWith('dist/test/support/') || path.endsWith('.map'))).toEqual(
      [],
    )
    // Every path `files` names (the ! ones exclude) exists.
    for (const entry of manifest.files.filter((f) => !f.startsWith('!')))
      expect(existsSync(join(ROOT, entry))).toBe(true)
  })

  it('imports at run time only its dependencies, and its optional peers only where they are optional', () => {
    const dependencies = new Set(Object.keys(manifest.dependencies))
    const peers = new Set(Object.keys(manifest.peerDependencies))
    const strays: string[] = []
    for (const file of scripts(join(installed, 'dist'))) {
      const where = relative(installed, file)
      for (const name of importedPackages(readFileSync(file, 'utf8'))) {
        if (name === 'analyst') continue // its own name, in doc comments
        if (dependencies.has(name)) continue
        if (peers.has(name) && manifest.peerDependenciesMeta[name]?.optional) continue
        strays.push(`${where}: ${name}`)
      }
    }
    expect(strays).toEqual([])
    // vitest is a peer of the conformance suite alone (analyst/test).
    const vitestUsers = scripts(join(installed, 'dist'))
      .filter((file) => importedPackages(readFileSync(file, 'utf8')).includes('vitest'))
      .map((file) => relative(installed, file))
    expect(vitestUsers).toEqual(['dist/test/conformance.js'])
  })

  it('loads every entry point with only its production dependencies installed', () => {
    // A consumer of the installed package: node_modules/analyst links to it.
    const consumer = join(dir, 'consumer')
    mkdirSync(join(consumer, 'node_modules'), { recursive: true })
    symlinkSync(installed, join(consumer, 'node_modules', 'analyst'))
    const entries = Object.keys(manifest.exports)
      .filter((key) => !key.endsWith('.json'))
      .map((key) => (key === '.' ? 'analyst' : `analyst/${key.slice(2)}`))
    writeFileSync(
      join(consumer, 'load.mjs'),
      `const out = {}\nfor (const entry of ${JSON.stringify(entries)}) {\n  try { await import(entry); out[entry] = 'ok' } catch (error) { out[entry] = error.message }\n}\nconsole.log(JSON.stringify(out))\n`,
    )
    const result = spawnSync(process.execPath, ['load.mjs'], { cwd: consumer, env, encoding: 'utf8' })
    expect(result.status, result.stderr).toBe(0)
    const loaded = JSON.parse(result.stdout) as Record<string, string>
    const optional: Record<string, string> = {
      'analyst/langchain': '@langchain/core',
      'analyst/test': 'vitest',
    }
    for (const entry of entries) {
      if (optional[entry]) expect(loaded[entry]).toContain(`'${optional[entry]}'`)
      else expect(loaded[entry], entry).toBe('ok')
    }
  })

  it('analyst doctor passes from another folder', () => {
    const { code, stdout } = analyst(['doctor', '--json'], dir)
    const report = JSON.parse(stdout) as {
      ok: boolean
      checks: Array<{ name: string; ok: boolean; detail: string }>
    }
    expect(report.checks.find((check) => check.name === 'sandbox')).toMatchObject({ ok: true })
    expect(code).toBe(0)
  })

  it('analyst run runs a pandas cell in a jail', () => {
    const work = join(dir, 'work')
    mkdirSync(work)
    writeFileSync(join(work, 'sales.csv'), 'region,amount\nnorth,10\nsouth,32\n')
    writeFileSync(
      join(work, 'cell.py'),
      "import os\nimport pandas as pd\ndf = pd.read_csv('data/sales.csv')\nprint('total', df.amount.sum())\nprint('host home visible:', os.path.exists('/root'))\n",
    )
    const { code, stdout, stderr } = analyst(['run', 'cell.py', '--data', 'sales.csv'], work)
    expect(code, stderr).toBe(0)
    expect(stdout).toContain('total 42')
    expect(stdout).toContain('host home visible: False')
  })

  it('analyst serve answers /healthz and serves the web UI', async () => {
    const child = spawn(join(prefix, 'bin', 'analyst'), ['serve', '--port', '0'], {
      cwd: dir,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let output = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
    })
    try {
      const url = await waitFor(
        () =>
          output.match(/serving on (http:\/\/\S+)/)?.[1] ?? (child.exitCode !== null ? 'exited' : undefined),
        {
          what: () => `serve to print its address (so far: ${output})`,
          timeoutMs: 60_000,
        },
      )
      expect(url, output).not.toBe('exited')
      const health = await fetch(`${url}/healthz`)
      expect(health.status).toBe(200)
      const page = await fetch(`${url}/`)
      expect(page.status).toBe(200)
      expect(await page.text()).toContain('<title>Analyst</title>')
    } finally {
      child.kill('SIGTERM')
      await new Promise((done) => (child.exitCode !== null ? done(undefined) : child.once('exit', done)))
    }
  })
})
