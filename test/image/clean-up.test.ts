/**
 * The image suite's clean-up of images (removeStaleImages, at the end of npm run test:image): the
 * layers that a changed step made stale go, while the layers that a next build reuses stay, and
 * so does another's dangling image, which podman image prune would have taken. Real podman builds
 * of images FROM scratch (seconds, no network).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { images, must, podman, removeStaleImages } from './podman.js'

const dir = mkdtempSync(join(tmpdir(), 'analyst-clean-up-'))
const OURS = 'localhost/analyst-clean-up-test:1'
const THEIRS = 'localhost/someone-else-clean-up-test:1'
const made = new Set<string>()

afterAll(async () => {
  await podman(['rmi', '-f', OURS, THEIRS])
  for (const id of made) await podman(['rmi', id])
  rmSync(dir, { recursive: true, force: true })
})

/** Builds `FROM scratch`, three COPY steps (the last two read `second`), as name; its id and its parent's. */
async function build(name: string, who: string, second: string) {
  writeFileSync(join(dir, 'first'), `${who}: a step that stays`)
  writeFileSync(join(dir, 'second'), `${who}: ${second}`)
  writeFileSync(join(dir, 'third'), `${who}: after the change`)
  writeFileSync(
    join(dir, 'Containerfile'),
    'FROM scratch\nCOPY first /first\nCOPY second /second\nCOPY third /third\n',
  )
  const id = (await must(['build', '--layers', '--pull=never', '--quiet', '-t', name, dir])).trim()
  const full = (await must(['image', 'inspect', '--format', '{{.ID}} {{.Parent}}', id])).trim().split(' ')
  for (const image of full) made.add(image)
  return { id: full[0] as string, parent: full[1] as string }
}

it("removes the layers that a change made stale; keeps the next build's cache and another's dangling image", async () => {
  // Another's image, rebuilt before the run: its first build is dangling already.
  const theirs = await build(THEIRS, 'theirs', 'one')
  await build(THEIRS, 'theirs', 'two')
  expect(images().get(theirs.id)?.dangling).toBe(true)

  const before = images()
  const first = await build(OURS, 'ours', 'one')
  const second = await build(OURS, 'ours', 'two') // the last two steps run again
  const cache = (await must(['image', 'inspect', '--format', '{{.Parent}}', second.parent])).trim()
  expect(images().get(first.id)?.dangling).toBe(true)

  const removed = removeStaleImages(before)

  const now = images()
  // The first build's last two steps (its third step, then its second, dangling in turn).
  expect([first.id, first.parent].filter((id) => now.has(id))).toEqual([])
  // The second build, and its first step, which a next build reuses.
  expect(now.get(second.id)?.names).toEqual([OURS])
  expect(now.has(second.parent) && now.has(cache)).toBe(true)
  // Another's dangling image, there before the run.
  expect(now.get(theirs.id)?.dangling).toBe(true)
  expect(removed).toContain(first.id)
})
