import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
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

  it('reports created and changed files once, and ignores links and the data mount', async () => {
    mkdirSync(join(root, 'work/data'))
    writeFileSync(join(root, 'work/data/ignored.csv'), 'x')
    writeFileSync(join(root, 'work/a.csv'), '1')
    symlinkSync(outside, join(root, 'work/escape'))
    expect((await workspace.changes()).map((a) => [a.name, a.size, a.mimeType])).toEqual([
      ['a.csv', 1, 'text/csv'],
    ])
    expect(await workspace.changes()).toEqual([])
    writeFileSync(join(root, 'work/a.csv'), '22')
    mkdirSync(join(root, 'work/plots'))
    writeFileSync(join(root, 'work/plots/p.png'), 'png')
    expect((await workspace.changes()).map((a) => a.name)).toEqual(['a.csv', 'plots/p.png'])
  })

  it('does not report a file the host itself wrote', async () => {
    workspace.write('mine.txt', new Uint8Array([1]))
    expect(await workspace.changes()).toEqual([])
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

describe('Workspace: details and links', () => {
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

  it("gives each entry's mode, permissions, owner and time when asked, and only then", () => {
    writeFileSync(join(root, 'work/a.txt'), 'abc', { mode: 0o600 })
    mkdirSync(join(root, 'work/d'), { mode: 0o750 })
    symlinkSync('a.txt', join(root, 'work/link'))
    expect(workspace.list('.')).toEqual([
      { name: 'a.txt', type: 'file', path: '/home/user/a.txt', size: 3 },
      { name: 'd', type: 'dir', path: '/home/user/d', size: 0 },
    ])
    const [file, dir, link] = workspace.list('.', { details: true })
    expect(file).toMatchObject({
      name: 'a.txt',
      mode: 0o600,
      permissions: '-rw-------',
      owner: 'user',
      group: 'user',
    })
    expect(file?.modifiedTime).toBeInstanceOf(Date)
    expect(dir).toMatchObject({ name: 'd', type: 'dir', mode: 0o750, permissions: 'drwxr-x---' })
    expect(link).toMatchObject({ name: 'link', type: 'file', mode: 0o600, symlinkTarget: '/home/user/a.txt' })
    expect(link?.permissions).toBe('Lrwxrwxrwx')
    expect(workspace.stat('link')).toBeUndefined()
    expect(workspace.stat('link', { details: true })).toMatchObject({ symlinkTarget: '/home/user/a.txt' })
    expect(workspace.stat('.', { details: true })).toMatchObject({
      name: 'user',
      type: 'dir',
      path: '/home/user',
    })
  })

  it('resolves a chain of links inside the workspace, and never through one that leaves it', () => {
    writeFileSync(join(root, 'work/a.txt'), 'abc')
    symlinkSync('a.txt', join(root, 'work/one'))
    symlinkSync('one', join(root, 'work/two'))
    symlinkSync(join(outside, 'secret.txt'), join(root, 'work/host-path'))
    symlinkSync(outside, join(root, 'work/host-dir'))
    symlinkSync('host-dir/secret.txt', join(root, 'work/through'))
    symlinkSync('/etc/passwd', join(root, 'work/system'))
    const byName = Object.fromEntries(workspace.list('.', { details: true }).map((e) => [e.name, e]))
    expect(byName.two).toMatchObject({ type: 'file', symlinkTarget: '/home/user/a.txt' })
    // A host path is no sandbox path: reported as written, never looked at.
    expect(byName['host-path']).toMatchObject({
      type: 'symlink',
      mode: 0,
      symlinkTarget: join(outside, 'secret.txt'),
    })
    expect(byName.through).toMatchObject({ type: 'symlink', symlinkTarget: '/home/user/host-dir/secret.txt' })
    expect(byName.system).toMatchObject({ type: 'symlink', symlinkTarget: '/etc/passwd' })
  })

  it('counts the disk the workspace uses, data/ aside', () => {
    writeFileSync(join(root, 'work/big.bin'), Buffer.alloc(256 * 1024, 1))
    mkdirSync(join(root, 'work/data'))
    writeFileSync(join(root, 'work/data/input.bin'), Buffer.alloc(1024 * 1024, 1))
    const used = workspace.diskUsed()
    expect(used).toBeGreaterThanOrEqual(256 * 1024)
    expect(used).toBeLessThan(1024 * 1024)
  })
})

describe('Workspace: changes without a walk', () => {
  let root: string
  let workspace: Workspace
  const work = (path = '') => join(root, 'work', path)
  beforeEach(() => {
    root = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'analyst-ws-'))
    mkdirSync(work())
    mkdirSync(join(root, 'data'))
    workspace = new Workspace(work(), join(root, 'data'))
  })
  afterEach(() => {
    workspace.close()
    rmSync(root, { recursive: true, force: true })
  })
  const names = async () => (await workspace.changes()).map((a) => a.name)

  it('finds new, changed, moved and replaced files among many, and none that only changed mode', async () => {
    for (let folder = 0; folder < 20; folder++) {
      mkdirSync(work(`set/${folder}`), { recursive: true })
      for (let file = 0; file < 100; file++) writeFileSync(work(`set/${folder}/${file}.txt`), `${file}`)
    }
    expect(await names()).toHaveLength(2000)
    expect(await names()).toEqual([])
    writeFileSync(work('set/3/7.txt'), 'changed')
    writeFileSync(work('set/19/new.csv'), 'new')
    chmodSync(work('set/4/1.txt'), 0o600)
    expect(await names()).toEqual(['set/19/new.csv', 'set/3/7.txt'])
    // A folder moved, one removed and made again, a file in a folder made since.
    renameSync(work('set/5'), work('moved'))
    rmSync(work('set/6'), { recursive: true })
    mkdirSync(work('set/6'))
    writeFileSync(work('set/6/again.txt'), 'x')
    mkdirSync(work('fresh/deep'), { recursive: true })
    writeFileSync(work('fresh/deep/f.txt'), 'x')
    const found = await names()
    expect(found.filter((name) => name.startsWith('moved/'))).toHaveLength(100)
    expect(found.filter((name) => !name.startsWith('moved/'))).toEqual([
      'fresh/deep/f.txt',
      'set/6/again.txt',
    ])
    // Written after the move: through the folder's new name only.
    writeFileSync(work('moved/0.txt'), 'after the move')
    rmSync(work('set/7/0.txt'))
    expect(await names()).toEqual(['moved/0.txt'])
    writeFileSync(work('set/7/0.txt'), 'back')
    expect(await names()).toEqual(['set/7/0.txt'])
  })

  it("does not report the host's own writes in a new folder, and ignores links", async () => {
    expect(await names()).toEqual([])
    workspace.write('out/mine.txt', new Uint8Array([1]))
    symlinkSync(work('out/mine.txt'), work('out/link'))
    writeFileSync(work('out/theirs.txt'), 'x')
    expect(await names()).toEqual(['out/theirs.txt'])
  })
})
