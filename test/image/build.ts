/**
 * Global setup of npm run test:image: builds the images the tests run (npm run image, its steps
 * cached), once, and removes every container, volume and network the tests left, at the end.
 */
import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import { cleanUp, FROM_CONTAINERFILE } from './podman.js'

export default function setup() {
  // ANALYST_IMAGE_SKIP_BUILD=1: the images are there already (a rerun while they are fresh).
  if (process.env.ANALYST_IMAGE_SKIP_BUILD === '1') return () => cleanUp()
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
