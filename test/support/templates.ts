/**
 * The test templates, each made once by the product's builder and kept under the repo's gitignored
 * .cache/ so that later runs (and CI's second run, which restores .cache) take it in a moment: a
 * Debian trixie one (Python 3.13, pandas 2), and a Debian bullseye one with nothing but what the
 * kernel needs (Python 3.9, the oldest CPython the kernel protocol supports).
 * @module
 */
import { existsSync, mkdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { buildTemplate } from '../../src/templates/build.js'
import { holdLock } from '../../src/templates/lock.js'
import { parseSpec } from '../../src/templates/spec.js'
import type { BuiltTemplate } from '../../src/templates/types.js'

/**
 * The repo's .cache when other users can reach it, else a folder under /var/tmp (a clone in a
 * mkdtemp folder, or under /root). Sandboxes reach a template behind a closed folder too
 * (template-reach.ts binds it as root); /var/tmp keeps the cache between stress runs' clones.
 */
function reachableCache(): string {
  const cache = join(import.meta.dirname, '..', '..', '.cache')
  let path = ''
  for (const part of dirname(cache).split('/').filter(Boolean)) {
    path += `/${part}`
    if ((statSync(path).mode & 0o001) === 0) return `/var/tmp/analyst-test-cache-${process.getuid?.() ?? 0}`
  }
  return cache
}
const CACHE = reachableCache()
/** The Analyst home whose store holds the test templates. */
export const TEMPLATE_HOME = join(CACHE, 'analyst-home')
export const TRIXIE = 'test-trixie'
export const BULLSEYE = 'test-bullseye'
/** Each test template's spec, by its name. */
const SPECS: Record<string, string> = {
  /**
   * Made by the product's builder on the small trixie base that test/templates builds too, so that
   * one mmdebstrap serves both (TEMPLATE_CACHE holds it): Python 3.13 with pandas 2 and matplotlib.
   */
  [TRIXIE]: [
    'base: debian:trixie-slim',
    'apt: [python3-pandas, python3-matplotlib, python3-ipython, iproute2]',
    'env: { ANALYST_TEMPLATE_TEST: trixie }',
  ].join('\n'),
  /**
   * The base (python3 with venv and pip, as every Debian base has) and iproute2 for the hostile
   * suite's network cases: the kernel boots without numpy or pandas, and a small root is a short
   * build in CI (31 s cold, 116 MiB). Python 3.9.2.
   */
  [BULLSEYE]: [
    'base: debian:bullseye-slim',
    'apt: [iproute2]',
    'env: { ANALYST_TEMPLATE_TEST: bullseye }',
  ].join('\n'),
}
/** Where the builder keeps base roots and layers: the test files that build templates share it. */
export const TEMPLATE_CACHE = process.env.ANALYST_TEMPLATE_CACHE ?? join(CACHE, 'templates')

/** Whether templates can be made here: mmdebstrap and root (its rootfs keeps root's ownership). */
export const canMakeTemplates = process.getuid?.() === 0 && existsSync('/usr/bin/mmdebstrap')

const made = new Map<string, Promise<BuiltTemplate>>()

/** A test template by its name, made if it is not in the cache yet (a few minutes, once). */
export function testTemplate(name: string): Promise<BuiltTemplate> {
  const spec = SPECS[name]
  if (spec === undefined) throw new Error(`No test template "${name}": ${Object.keys(SPECS).join(', ')}`)
  let template = made.get(name)
  if (!template) {
    template = make(name, spec)
    made.set(name, template)
  }
  return template
}

/** The trixie test template. */
export function trixieTemplate(): Promise<BuiltTemplate> {
  return testTemplate(TRIXIE)
}

async function make(name: string, spec: string): Promise<BuiltTemplate> {
  // Test files run in several processes: one builds, the others wait for it, then find it built.
  // One lock for every test template: each project's globalSetup has a module of its own, and two
  // builds at once would hold back the first template's files (the setups start them in order).
  mkdirSync(CACHE, { recursive: true })
  const release = await holdLock(join(CACHE, 'test-templates.lock'))
  try {
    const { template } = await buildTemplate(parseSpec(spec, CACHE), {
      home: TEMPLATE_HOME,
      name,
      cacheDir: TEMPLATE_CACHE,
      env: {},
    })
    return template
  } finally {
    release()
  }
}
