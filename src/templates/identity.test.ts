import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { canonicalJson, filesHash, templateId } from './identity.js'
import { parseSpec } from './spec.js'

describe('template ids', () => {
  const context = mkdtempSync(join(tmpdir(), 'analyst-identity-'))
  mkdirSync(join(context, 'lib'))
  writeFileSync(join(context, 'lib', 'a.py'), 'A = 1\n')
  const spec = 'base: debian:trixie\napt: [python3-six]\nfiles: [{ src: lib, dest: /opt/lib }]\n'
  const id = (text = spec, pip = {}) =>
    templateId({ recipe: parseSpec(text, context), baseIdentity: { kind: 'debian', suite: 'trixie' }, pip })

  it('is the same for the same spec and inputs, whatever the order of keys or formatting', () => {
    expect(id()).toMatch(/^[0-9a-f]{64}$/)
    expect(id()).toBe(id('files: [{dest: /opt/lib, src: lib}]\napt:  [ python3-six ]\nbase: debian:trixie\n'))
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: undefined }] })).toBe('{"a":[{"d":2}],"b":1}')
  })

  it("changes with a copied file's contents, the steps, the base and pip's index", () => {
    const before = id()
    writeFileSync(join(context, 'lib', 'a.py'), 'A = 2\n')
    expect(id()).not.toBe(before)
    expect(id(spec.replace('python3-six', 'python3-tabulate'))).not.toBe(id())
    expect(id(spec, { indexUrl: 'http://127.0.0.1:1/simple' })).not.toBe(id())
    expect(
      templateId({
        recipe: parseSpec(spec, context),
        baseIdentity: { kind: 'debian', suite: 'bookworm' },
        pip: {},
      }),
    ).not.toBe(id())
  })

  it('refuses copy sources outside the spec folder', () => {
    expect(() => id('base: debian:trixie\nfiles: [{ src: ../etc, dest: /opt/x }]\n')).toThrow(
      /outside the build's folder/,
    )
    expect(() => id('base: debian:trixie\nfiles: [{ src: missing, dest: /opt/x }]\n')).toThrow(/no such file/)
    expect(filesHash(join(context, 'lib'))).toBe(filesHash(join(context, 'lib')))
  })
})
