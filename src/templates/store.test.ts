import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { InvalidArgumentError, NotFoundError } from '../errors.js'
import { commitTemplate } from '../test/support/templates.js'
import { openTemplates, resolveTemplate, type TemplateManifest } from './store.js'

const idOf = (char: string) => char.repeat(64)

/** What these tests' templates have beyond the shared default: a venv's Python, pandas, a PATH. */
const DEFAULTS: Partial<TemplateManifest> = {
  python: { path: '/opt/venv/bin/python', version: '3.13.5' },
  packages: { pandas: '2.2.3' },
  env: { PATH: '/opt/venv/bin:/usr/bin:/bin' },
  sizeBytes: 1000,
}

describe('template store', () => {
  let home: string
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'analyst-templates-'))
  })
  afterEach(() => rmSync(home, { recursive: true, force: true }))

  /** A build as the builder makes it: a scratch folder, its rootfs, the manifest last, committed. */
  function build(id: string, name?: string, overrides: Partial<TemplateManifest> = {}) {
    return commitTemplate(home, id, { ...(name ? { name } : {}), manifest: { ...DEFAULTS, ...overrides } })
  }

  it('resolves a name, an id and an id prefix to the folder and rootfs where they are', () => {
    build(idOf('a'), 'modern')
    const byName = resolveTemplate(home, 'modern')
    expect(byName).toMatchObject({
      id: idOf('a'),
      names: ['modern'],
      dir: join(home, 'templates', idOf('a')),
      rootfs: join(home, 'templates', idOf('a'), 'rootfs'),
      packages: { pandas: '2.2.3' },
    })
    expect(resolveTemplate(home, idOf('a')).names).toEqual(['modern'])
    expect(resolveTemplate(home, idOf('a').slice(0, 12)).id).toBe(idOf('a'))
  })

  it('says which templates exist and how to build one when a name is not found', () => {
    expect(() => resolveTemplate(home, 'modern')).toThrow(/No template "modern"/)
    build(idOf('a'), 'modern')
    build(idOf('b'), 'r', { hasRootfs: false, base: { kind: 'host' } })
    try {
      resolveTemplate(home, 'nosuch')
      expect.unreachable()
    } catch (error) {
      expect(NotFoundError.isInstance(error)).toBe(true)
      expect((error as NotFoundError).hint).toMatch(/modern, r\b.*analyst template build SPEC --name nosuch/)
    }
    expect(resolveTemplate(home, 'r').rootfs).toBeUndefined()
  })

  it('does not count a folder without its manifest (a build that never finished)', () => {
    const store = openTemplates(home)
    mkdirSync(join(store.root, idOf('c')), { recursive: true })
    store.scratch('build')
    expect(store.list()).toEqual([])
    expect(() => store.resolve(idOf('c'))).toThrow(NotFoundError)
  })

  it('lists newest first, moves a name to a newer build, and refuses bad names', () => {
    build(idOf('a'), 'modern', { createdAt: '2026-01-01T00:00:00.000Z' })
    build(idOf('b'), 'modern', { createdAt: '2026-02-01T00:00:00.000Z' })
    const store = openTemplates(home)
    expect(store.list().map((t) => [t.id[0], t.names])).toEqual([
      ['b', ['modern']],
      ['a', []],
    ])
    expect(() => store.setName('Bad Name', idOf('a'))).toThrow(InvalidArgumentError)
    expect(() => store.setName(idOf('a').slice(0, 20), idOf('a'))).toThrow(InvalidArgumentError)
  })

  it('removes a name, and the template with its last name; an id removes it and its names', () => {
    build(idOf('a'), 'one')
    const store = openTemplates(home)
    store.setName('two', idOf('a'))
    expect(store.remove('one')).toEqual({ name: 'one' })
    expect(store.resolve('two').names).toEqual(['two'])
    expect(store.remove('two')).toEqual({ name: 'two', id: idOf('a') })
    expect(store.list()).toEqual([])
    build(idOf('b'), 'three')
    expect(store.remove(idOf('b'))).toEqual({ id: idOf('b') })
    expect(() => store.resolve('three')).toThrow(NotFoundError)
  })

  it('keeps the template already committed under an id unless told to replace it', () => {
    build(idOf('a'), undefined, { sizeBytes: 1 })
    expect(build(idOf('a'), undefined, { sizeBytes: 2 }).sizeBytes).toBe(1)
    expect(commitTemplate(home, idOf('a'), { manifest: { sizeBytes: 3 }, replace: true }).sizeBytes).toBe(3)
    expect(openTemplates(home).list()).toHaveLength(1)
  })
})
