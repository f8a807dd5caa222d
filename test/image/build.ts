/**
 * Global setup of npm run test:image: builds the images the tests run (npm run image, its steps
 * cached), once, and removes every container, volume and network the tests left, at the end.
 */
import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import { cleanUp, FROM_CONTAINERFILE, IMAGE, JUPYTER_IMAGE, POSTGRES_IMAGE, PROXY_IMAGE } from './podman.js'

export default function setup() {
  // ANALYST_IMAGE_SKIP_BUILD=1: the images are there already (a rerun while they are fresh).
  if (process.env.ANALYST_IMAGE_SKIP_BUILD === '1') {
    const images = FROM_CONTAINERFILE ? [IMAGE] : [IMAGE, POSTGRES_IMAGE, PROXY_IMAGE, JUPYTER_IMAGE]
    const missing = images.filter((image) => spawnSync('podman', ['image', 'exists', image]).status !== 0)
    // Else each stack would wait minutes for replicas whose image is not there.
    if (missing.length > 0)
      throw new Error(
        `ANALYST_IMAGE_SKIP_BUILD=1, but ${missing.join(', ')} not built: the last run removed them (keep them with ANALYST_IMAGE_KEEP=1), or run without ANALYST_IMAGE_SKIP_BUILD`,
      )
    return () => cleanUp()
  }
  const started = Date.now()
  const build = spawnSync(
    process.execPath,
    [
      resolve('scripts/image.mjs'),
      ...(FROM_CONTAINERFILE
        ? ['--only', 'containerfile']
        : ['--with', 'postgres', '--with', 'proxy', '--with', 'jupyter']),
    ],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  )
  if (build.status !== 0) throw new Error(`npm run image failed (exit ${build.status ?? build.signal})`)
  process.stderr.write(`[test:image] images ready in ${Math.round((Date.now() - started) / 1000)} s\n`)
  return () => cleanUp()
}
