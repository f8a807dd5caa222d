import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { splitPath, Workspace } from './workspace.js'

describe('splitPath', () => {
  it('takes paths relative to the workspace or absolute inside the sandbox', () => {
    expect(splitPath('a/b.csv')).toEqual({ area: 'work', parts: ['a', 'b.csv'] })
    expect(splitPath('/home/user/a/./b.csv')).toEqual({ area: 'work', parts: ['a', 'b.csv'] })
    expect(splitPath('data/x.csv')).toEqual({ area: 'data', parts: ['x.csv'] })
    expect(splitPath('a/../data/x.csv')).toEqual({ area: 'data', parts: ['x.csv'] })
    expect(splitPath('.')).toEqual({ area: 'work', parts: [] })
  })

  it('refuses anything that leaves the workspace', () => {
    for (const path of ['../x', 'a/../../x', '/etc/passwd', '/home/userx/a', '/home', 'a\0b']) {
      expect(() => splitPath(path), path).toThrow(/outside the sandbox/)
    }
  })
})

describe('Workspace', () => {
  let root: string
  let outside: string
  let workspace: Workspace
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'analyst-ws-'))
    mkdirSync(join(root, 'work'))
    mkdirSync(join(root, 'data'))
    outside = join(root, 'outside')
    mkdirSync(outside)
    writeFileSync(join(outside, 'secret.txt'), 'host secret')
    workspace = new Workspace(join(root, 'work'), join(root, 'data'))
  })
  afterEach(() => rmSync(root, { recursive: true, force: true }))

  it('writes, reads, lists, stats and removes, creating folders as needed', () => {
    const bytes = new TextEncoder().encode('a,b\n1,2\n')
    expect(workspace.write('out/deep/t.csv', bytes)).toEqual({
      name: 't.csv',
      type: 'file',
      path: '/home/user/out/deep/t.csv',
      size: 8,
    })
    expect(new TextDecoder().decode(workspace.read('/home/user/out/deep/t.csv'))).toBe('a,b\n1,2\n')
    expect(workspace.list('out')).toEqual([
      { name: 'deep', type: 'dir', path: '/home/user/out/deep', size: 0 },
    ])
    expect(workspace.stat('out/deep/t.csv')?.size).toBe(8)
    workspace.write('out/deep/t.csv', new TextEncoder().encode('x'))
    expect(readFileSync(join(root, 'work/out/deep/t.csv'), 'utf8')).toBe('x')
    workspace.remove('out')
    expect(existsSync(join(root, 'work/out'))).toBe(false)
  })

  it('writes data/ paths to the read-only input folder', () => {
    workspace.write('data/in.csv', new TextEncoder().encode('x'))
    expect(readFileSync(join(root, 'data/in.csv'), 'utf8')).toBe('x')
  })

  it('never reads through a link that code planted', () => {
    symlinkSync(join(outside, 'secret.txt'), join(root, 'work/link.txt'))
    symlinkSync(outside, join(root, 'work/dir-link'))
    expect(() => workspace.read('link.txt')).toThrow(/links are not followed/)
    expect(() => workspace.read('dir-link/secret.txt')).toThrow(/link/)
    expect(() => workspace.list('dir-link')).toThrow(/link/)
    expect(workspace.stat('dir-link/secret.txt')).toBeUndefined()
  })

  it('never writes through a link, and creates nothing outside', () => {
    symlinkSync(outside, join(root, 'work/dir-link'))
    symlinkSync(join(outside, 'secret.txt'), join(root, 'work/file-link'))
    expect(() => workspace.write('dir-link/new.txt', new Uint8Array([1]))).toThrow(/link/)
    expect(() => workspace.write('file-link', new Uint8Array([1]))).toThrow(/not a regular file/)
    expect(existsSync(join(outside, 'new.txt'))).toBe(false)
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('host secret')
  })

  it('removes links themselves, not what they point to', () => {
    mkdirSync(join(root, 'work/folder'))
    symlinkSync(outside, join(root, 'work/folder/escape'))
    workspace.remove('folder')
    expect(existsSync(join(root, 'work/folder'))).toBe(false)
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('host secret')
  })

  it('reports created and changed files once, and ignores links and the data mount', () => {
    mkdirSync(join(root, 'work/data'))
    writeFileSync(join(root, 'work/data/ignored.csv'), 'x')
    writeFileSync(join(root, 'work/a.csv'), '1')
    symlinkSync(outside, join(root, 'work/escape'))
    expect(workspace.changes().map((a) => [a.name, a.size, a.mimeType])).toEqual([['a.csv', 1, 'text/csv']])
    expect(workspace.changes()).toEqual([])
    writeFileSync(join(root, 'work/a.csv'), '22')
    mkdirSync(join(root, 'work/plots'))
    writeFileSync(join(root, 'work/plots/p.png'), 'png')
    expect(workspace.changes().map((a) => a.name)).toEqual(['a.csv', 'plots/p.png'])
  })

  it('does not report a file the host itself wrote', () => {
    workspace.write('mine.txt', new Uint8Array([1]))
    expect(workspace.changes()).toEqual([])
  })

  it('adds data by link or copy, and refuses bad names', () => {
    const source = join(outside, 'secret.txt')
    expect(workspace.addData(source, 'input.txt').path).toBe('/home/user/data/input.txt')
    expect(readFileSync(join(root, 'data/input.txt'), 'utf8')).toBe('host secret')
    expect(() => workspace.addData(source, '../x')).toThrow(/not a valid file name/)
    expect(() => workspace.addData(join(outside, 'missing'), 'm')).toThrow(/no such file/)
    expect(() => workspace.addData(outside, 'dir')).toThrow(/not a regular file/)
  })
})
