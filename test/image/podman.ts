/**
 * Containers for npm run test:image: podman with the flags the README gives (read from its Deploy
 * section, so the test runs what users are told to run), and everything a test makes labelled, so
 * that the end of the run removes it.
 * @module
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { waitFor } from '../support/wait.js'

const VERSION = JSON.parse(readFileSync(resolve('package.json'), 'utf8')).version as string
/**
 * ANALYST_TEST_IMAGE_FROM=containerfile: the tests of container.test.ts run on the image that
 * deploy/Containerfile builds (npm run image -- --only containerfile) instead of npm run image's.
 */
export const FROM_CONTAINERFILE = process.env.ANALYST_TEST_IMAGE_FROM === 'containerfile'
export const IMAGE = FROM_CONTAINERFILE
  ? `localhost/analyst-containerfile:${VERSION}`
  : `localhost/analyst:${VERSION}`
export const POSTGRES_IMAGE = 'localhost/analyst-postgres:15'
export const PROXY_IMAGE = 'localhost/analyst-proxy:2.6'
export const JUPYTER_IMAGE = 'localhost/analyst-jupyter:1.23'
export const LABEL = 'analyst-test-image=1'
/** The template that the tests' image carries (npm run image -- --with-template), and its one package. */
export const TEMPLATE = 'tiny'
export const TEMPLATE_PACKAGE = { name: 'tinypkg', version: '0.1.0' }
/** The compose project of the tests. */
export const PROJECT = 'analysttest'

/** The flags of the README's `podman run`, that change how the container runs (not ports, names, volumes). */
export function readmeRunFlags(): string[] {
  const readme = readFileSync(resolve('README.md'), 'utf8')
  const deploy = readme.slice(readme.indexOf('## Deploy'))
  const command = deploy.match(/^podman run [\s\S]*?[^\\]\n/m)?.[0]
  if (!command) throw new Error("README's Deploy section has no podman run command")
  const words = command.replace(/\\\n/g, ' ').trim().split(/\s+/).slice(2)
  const flags: string[] = []
  const kept = new Set(['--runtime', '--ulimit', '--cap-drop', '--security-opt', '--user'])
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string
    if (word === '--read-only') flags.push(word)
    else if (kept.has(word)) flags.push(word, words[++i] as string)
  }
  return flags
}

export interface Result {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * podman's working folder. conmon, which podman starts beside each container and which keeps its
 * working folder, makes an empty file `oom` there when the container's OOM killer fires (conmon
 * 2.1, open("oom", O_CREAT)): run from the repository, the OOM test left `oom` in its root.
 */
const PODMAN_CWD = join(tmpdir(), 'analyst-test-podman')

/** podman (or another command) without blocking the event loop: the tests' fake model answers meanwhile. */
export function podman(
  args: string[],
  options: { input?: string; command?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<Result> {
  mkdirSync(PODMAN_CWD, { recursive: true })
  return new Promise((resolvePromise, reject) => {
    const child = spawn(options.command ?? 'podman', args, {
      cwd: options.cwd ?? PODMAN_CWD,
      env: options.env ?? process.env,
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.once('error', reject)
    child.once('close', (code) => resolvePromise({ code, stdout, stderr }))
    child.stdin.end(options.input ?? '')
  })
}

/** The same, failing with podman's words when it fails. */
export async function must(args: string[], options: Parameters<typeof podman>[1] = {}): Promise<string> {
  const result = await podman(args, options)
  if (result.code !== 0)
    throw new Error(
      `${options.command ?? 'podman'} ${args.join(' ')} exited ${result.code}: ${result.stderr}${result.stdout}`,
    )
  return result.stdout
}

/** `podman run -d` with the README's flags and the test's label; resolves to the container's id. */
export async function startContainer(args: string[], image = IMAGE, command: string[] = []): Promise<string> {
  const id = await must(['run', '-d', '--label', LABEL, ...readmeRunFlags(), ...args, image, ...command])
  return id.trim()
}

/** A named volume, labelled for the clean-up. */
export async function volume(): Promise<string> {
  return (await must(['volume', 'create', '--label', LABEL])).trim()
}

/** Waits until the server at url answers /healthz; fails with the container's log. */
export async function healthy(url: string, container: string): Promise<void> {
  await waitFor(
    async () => {
      try {
        return (await fetch(`${url}/healthz`)).ok
      } catch {
        return false
      }
    },
    {
      what: () =>
        `${url}/healthz; the container logged: ${spawnSync('podman', ['logs', '--tail', '30', container], { encoding: 'utf8' }).stderr}`,
      timeoutMs: 120_000,
      intervalMs: 250,
    },
  )
}

/**
 * Removes what the tests made: containers, the compose project, volumes, networks, npm run image's
 * images, and the dangling images made since `before` (the images before the run's build).
 */
export function cleanUp(before?: ReturnType<typeof images>) {
  const ids = (args: string[]) =>
    spawnSync('podman', args, { encoding: 'utf8' }).stdout.split('\n').filter(Boolean)
  const containers = [
    ...ids(['ps', '-aq', '--filter', `label=${LABEL}`]),
    ...ids(['ps', '-aq', '--filter', `label=io.podman.compose.project=${PROJECT}`]),
  ]
  if (containers.length)
    spawnSync('podman', ['rm', '-f', '-v', '-t', '0', ...containers], { stdio: 'ignore' })
  const volumes = [
    ...ids(['volume', 'ls', '-q', '--filter', `label=${LABEL}`]),
    ...ids(['volume', 'ls', '-q', '--filter', `label=io.podman.compose.project=${PROJECT}`]),
  ]
  if (volumes.length) spawnSync('podman', ['volume', 'rm', '-f', ...volumes], { stdio: 'ignore' })
  for (const network of ids([
    'network',
    'ls',
    '-q',
    '--filter',
    `label=io.podman.compose.project=${PROJECT}`,
  ])) {
    spawnSync('podman', ['network', 'rm', '-f', network], { stdio: 'ignore' })
  }
  // npm run image's images are committed anew by each build (no next build reuses them): removed
  // unless ANALYST_IMAGE_KEEP=1. What a next build reuses stays: their base images (the root file
  // systems) and the Containerfile's image with its build stage, whose layers are podman build's cache.
  if (process.env.ANALYST_IMAGE_KEEP !== '1' && !FROM_CONTAINERFILE)
    spawnSync('podman', ['rmi', '-f', IMAGE, POSTGRES_IMAGE, PROXY_IMAGE, JUPYTER_IMAGE], { stdio: 'ignore' })
  if (before) removeStaleImages(before)
}

/** The images in podman's storage, by full id: whether dangling (no name, no child), and their names. */
export function images(): Map<string, { dangling: boolean; names: string[] }> {
  const result = spawnSync('podman', ['images', '-a', '--format', 'json'], { encoding: 'utf8' })
  const listed = result.status === 0 ? (JSON.parse(result.stdout || '[]') as PodmanImage[]) : []
  return new Map(
    listed.map((image) => [image.Id, { dangling: image.Dangling === true, names: image.Names ?? [] }]),
  )
}

interface PodmanImage {
  Id: string
  Dangling?: boolean
  Names?: string[]
}

/**
 * Removes the dangling images that are the suite's: made since `before` (an image replaced under
 * its name, a Containerfile step's layer that a changed source made stale), or named as one of
 * npm run image's (localhost/analyst…) then. Another's dangling images stay: no podman image
 * prune, which takes every one on the machine, and with it the Containerfile's cached build stage.
 * No -f: an image that a container uses stays. Returns the ids removed.
 */
export function removeStaleImages(before: ReturnType<typeof images>): string[] {
  const removed: string[] = []
  // Removing a stale step can leave the step before it dangling in turn (podman 4's rmi removes
  // that one too; an older podman may not).
  for (let round = 0; round < 20; round++) {
    const stale = [...images()]
      .filter(([id, now]) => {
        if (!now.dangling || removed.includes(id)) return false
        const then = before.get(id)
        return !then || then.names.some((name) => name.startsWith('localhost/analyst'))
      })
      .map(([id]) => id)
    const gone = stale.filter((id) => spawnSync('podman', ['rmi', id], { stdio: 'ignore' }).status === 0)
    if (gone.length === 0) break
    removed.push(...gone)
  }
  return removed
}
