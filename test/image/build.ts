/**
 * Global setup of npm run test:image: builds the images the tests run (npm run image, its steps
 * cached), once, with a small template baked in (`--with-template`), and removes every container,
 * volume and network the tests left, at the end, and the dangling images the run made.
 */
import { spawn, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { buildWheel, servePackageIndex } from '../templates/index-server.js'
import {
  cleanUp,
  FROM_CONTAINERFILE,
  IMAGE,
  images,
  JUPYTER_IMAGE,
  POSTGRES_IMAGE,
  PROXY_IMAGE,
  TEMPLATE,
  TEMPLATE_PACKAGE,
} from './podman.js'

/**
 * The template baked into the image: the image's own Python with a pip layer of one tiny wheel,
 * served by a PEP 503 index on 127.0.0.1, built into an ANALYST_HOME of its own (seconds, no
 * mmdebstrap). Resolves to that home; the caller removes it.
 */
async function buildTemplate(): Promise<string> {
  const cli = resolve('dist/cli/bin.js')
  if (!existsSync(cli)) throw new Error('dist/cli/bin.js is not built: run npm run build first')
  const dir = mkdtempSync(join(tmpdir(), 'analyst-image-template-'))
  chmodSync(dir, 0o755) // the builder's jail reads the template's folder as another uid
  const index = await servePackageIndex(buildWheel(dir, TEMPLATE_PACKAGE.name, TEMPLATE_PACKAGE.version))
  try {
    const spec = join(dir, 'spec.yaml')
    writeFileSync(
      spec,
      `base: host\npip:\n  packages: [${TEMPLATE_PACKAGE.name}==${TEMPLATE_PACKAGE.version}]\n  index-url: ${index.url}\n`,
    )
    const home = join(dir, 'home')
    const built = await runAsync(
      process.execPath,
      [cli, 'template', 'build', spec, '--name', TEMPLATE, '--quiet'],
      { ...process.env, ANALYST_HOME: home },
    )
    if (built !== 0) throw new Error(`analyst template build ${TEMPLATE} failed (exit ${built})`)
    return dir
  } finally {
    await index.close()
  }
}

/** A command whose output is shown, without blocking the event loop (the index answers meanwhile). */
async function runAsync(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<number | null> {
  return new Promise((done, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'inherit', 'inherit'] })
    child.once('error', reject)
    child.once('close', done)
  })
}

export default async function setup() {
  // What was there before the build: the clean-up removes only the dangling images the run made.
  const before = images()
  // ANALYST_IMAGE_SKIP_BUILD=1: the images are there already (a rerun while they are fresh).
  if (process.env.ANALYST_IMAGE_SKIP_BUILD === '1') {
    const images = FROM_CONTAINERFILE ? [IMAGE] : [IMAGE, POSTGRES_IMAGE, PROXY_IMAGE, JUPYTER_IMAGE]
    const missing = images.filter((image) => spawnSync('podman', ['image', 'exists', image]).status !== 0)
    // Else each stack would wait minutes for replicas whose image is not there.
    if (missing.length > 0)
      throw new Error(
        `ANALYST_IMAGE_SKIP_BUILD=1, but ${missing.join(', ')} not built: the last run removed them (keep them with ANALYST_IMAGE_KEEP=1), or run without ANALYST_IMAGE_SKIP_BUILD`,
      )
    return () => cleanUp(before)
  }
  const started = Date.now()
  // Both images carry it: the Containerfile's through deploy/templates/, where its users put theirs.
  const templateDir = await buildTemplate()
  try {
    const build = spawnSync(
      process.execPath,
      [
        resolve('scripts/image.mjs'),
        ...(FROM_CONTAINERFILE
          ? ['--only', 'containerfile']
          : ['--with', 'postgres', '--with', 'proxy', '--with', 'jupyter']),
        '--with-template',
        TEMPLATE,
      ],
      {
        stdio: ['ignore', 'inherit', 'inherit'],
        env: { ...process.env, ANALYST_HOME: join(templateDir, 'home') },
      },
    )
    if (build.status !== 0) throw new Error(`npm run image failed (exit ${build.status ?? build.signal})`)
  } finally {
    rmSync(templateDir, { recursive: true, force: true })
  }
  process.stderr.write(`[test:image] images ready in ${Math.round((Date.now() - started) / 1000)} s\n`)
  return () => cleanUp(before)
}
