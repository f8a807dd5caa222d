/**
 * Files through the official E2B SDK against `analyst serve`, as envd answers: listings depth
 * first with each entry's details, links with their targets, removal of what is not there, folder
 * watches on inotify, and signed file URLs.
 */

import { existsSync } from 'node:fs'
import { FilesystemEventType, InvalidArgumentError, Sandbox } from '@e2b/code-interpreter'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../support/wait.js'
import { type E2BServer, startE2BServer } from './server.js'

let e2b: E2BServer
let sandbox: Sandbox
beforeAll(async () => {
  e2b = await startE2BServer()
  sandbox = await Sandbox.create()
})
afterAll(async () => {
  await sandbox?.kill()
  await e2b?.close()
})

describe('E2B SDK: listings and entries', () => {
  it('lists depth first in name order, each folder followed by what is in it', async () => {
    for (const dir of ['tree/b', 'tree/a/y', 'tree/a/x', 'tree/a/x/deep']) await sandbox.files.makeDir(dir)
    await sandbox.files.write('tree/z.txt', 'z')
    await sandbox.files.write('tree/a/file.txt', 'f')
    const names = async (depth: number) =>
      (await sandbox.files.list('tree', { depth })).map((e) => e.path.slice('/home/user/tree/'.length))
    expect(await names(1)).toEqual(['a', 'b', 'z.txt'])
    expect(await names(2)).toEqual(['a', 'a/file.txt', 'a/x', 'a/y', 'b', 'z.txt'])
    expect(await names(5)).toEqual(['a', 'a/file.txt', 'a/x', 'a/x/deep', 'a/y', 'b', 'z.txt'])
  })

  it("gives each entry's mode, permissions, owner, group, size and time", async () => {
    const before = Date.now() - 2000
    await sandbox.files.write('detail/f.txt', 'four')
    const [dir] = (await sandbox.files.list('.')).filter((e) => e.name === 'detail')
    const [file] = await sandbox.files.list('detail')
    expect(file).toMatchObject({
      name: 'f.txt',
      type: 'file',
      size: 4,
      mode: 0o644,
      permissions: '-rw-r--r--',
      owner: 'user',
      group: 'user',
    })
    expect(file?.modifiedTime?.getTime()).toBeGreaterThan(before)
    expect(dir).toMatchObject({ type: 'dir', mode: 0o755, permissions: 'drwxr-xr-x', owner: 'user' })
    expect(dir?.size).toBeGreaterThan(0)
    await sandbox.commands.run('chmod 600 detail/f.txt')
    expect(await sandbox.files.getInfo('detail/f.txt')).toMatchObject({
      mode: 0o600,
      permissions: '-rw-------',
    })
  })

  it('lists links and answers for them with their targets, never following one outside', async () => {
    await sandbox.files.write('links/target.txt', 'target')
    await sandbox.commands.run(
      'cd links && ln -s target.txt to-file && ln -s ../links to-dir && ln -s /etc/passwd outside && ln -s missing dangling',
    )
    const listed = Object.fromEntries((await sandbox.files.list('links')).map((e) => [e.name, e]))
    expect(listed['to-file']).toMatchObject({ type: 'file', symlinkTarget: '/home/user/links/target.txt' })
    expect(listed['to-file']?.permissions).toMatch(/^L/)
    expect(listed['to-dir']).toMatchObject({ type: 'dir', symlinkTarget: '/home/user/links' })
    expect(listed.outside).toMatchObject({ type: 'symlink', symlinkTarget: '/etc/passwd' })
    expect(listed.dangling).toMatchObject({ type: 'symlink', symlinkTarget: '/home/user/links/missing' })
    expect(await sandbox.files.getInfo('links/to-file')).toMatchObject({
      name: 'to-file',
      symlinkTarget: '/home/user/links/target.txt',
    })
    // A link to a folder is listed, not walked into.
    const deep = (await sandbox.files.list('links', { depth: 3 })).map((e) => e.name)
    expect(deep.sort()).toEqual(['dangling', 'outside', 'target.txt', 'to-dir', 'to-file'])
    // Renamed, links answer for themselves as they do when listed (not with an internal error).
    expect(await sandbox.files.rename('links/outside', 'links/moved-outside')).toMatchObject({
      name: 'moved-outside',
      type: 'symlink',
      symlinkTarget: '/etc/passwd',
    })
    expect(await sandbox.files.rename('links/to-file', 'links/moved-to-file')).toMatchObject({
      name: 'moved-to-file',
      type: 'file',
      symlinkTarget: '/home/user/links/target.txt',
    })
  })

  it('removes what is not there without an error, as E2B does, and still refuses paths outside', async () => {
    await sandbox.files.remove('never-was.txt')
    await sandbox.files.remove('no/such/folder')
    await expect(sandbox.files.remove('/etc/passwd')).rejects.toBeInstanceOf(InvalidArgumentError)
  })

  it('keeps file metadata as envd does: user.e2b.* attributes, on getInfo, list and rename, cleared by an overwrite', async () => {
    const info = await sandbox.files.write('meta/a.txt', 'x', { metadata: { author: 'me', purpose: 'test' } })
    expect(info.metadata).toEqual({ author: 'me', purpose: 'test' })
    expect((await sandbox.files.getInfo('meta/a.txt')).metadata).toEqual({ author: 'me', purpose: 'test' })
    // Code sees them as extended attributes, and what code sets shows through the files API.
    const seen = await sandbox.runCode(
      "import os\nos.setxattr('meta/a.txt', 'user.e2b.extra', b'from code')\nsorted(os.listxattr('meta/a.txt'))",
    )
    expect(seen.text).toContain('user.e2b.author')
    const [listed] = await sandbox.files.list('meta')
    expect(listed?.metadata).toEqual({ author: 'me', purpose: 'test', extra: 'from code' })
    expect((await sandbox.files.rename('meta/a.txt', 'meta/b.txt')).metadata).toMatchObject({ author: 'me' })
    const overwritten = await sandbox.files.write('meta/b.txt', 'y')
    expect(overwritten.metadata).toBeUndefined()
    expect((await sandbox.files.getInfo('meta/b.txt')).metadata).toBeUndefined()
    expect((await sandbox.files.getInfo('meta')).metadata).toBeUndefined()
  })

  it('keeps metadata off files that a link leads to outside the workspace', async () => {
    await sandbox.commands.run('mkdir -p meta-links && ln -sfn /etc meta-links/etc')
    await expect(sandbox.files.write('meta-links/etc/passwd', 'x', { metadata: { a: 'b' } })).rejects.toThrow(
      /link/,
    )
  })
})

describe("E2B SDK: the sandbox's /tmp", () => {
  it("reads, writes, lists and removes the jail's own /tmp, which code shares and the host's is not", async () => {
    const marker = `e2b-tmp-${Math.random().toString(36).slice(2)}`
    const info = await sandbox.files.write(`/tmp/${marker}/a.txt`, 'from the API\n')
    expect(info.path).toBe(`/tmp/${marker}/a.txt`)
    // Owned by the sandbox's user: code can append to what the API wrote.
    const appended = await sandbox.commands.run(
      `echo from code >> /tmp/${marker}/a.txt && cat /tmp/${marker}/a.txt`,
    )
    expect(appended.stdout).toBe('from the API\nfrom code\n')
    expect(await sandbox.files.getInfo(`/tmp/${marker}/a.txt`)).toMatchObject({ owner: 'user', size: 23 })
    await sandbox.runCode(`open('/tmp/${marker}/b.txt', 'w').write('cell')`)
    expect(await sandbox.files.read(`/tmp/${marker}/b.txt`)).toBe('cell')
    // Overwriting clears metadata, which /tmp keeps as the workspace does.
    await sandbox.files.write(`/tmp/${marker}/b.txt`, 'cell', { metadata: { by: 'api' } })
    expect((await sandbox.files.getInfo(`/tmp/${marker}/b.txt`)).metadata).toEqual({ by: 'api' })
    await sandbox.files.write(`/tmp/${marker}/b.txt`, 'cell')
    expect((await sandbox.files.getInfo(`/tmp/${marker}/b.txt`)).metadata).toBeUndefined()
    expect((await sandbox.files.list(`/tmp/${marker}`)).map((e) => e.path)).toEqual([
      `/tmp/${marker}/a.txt`,
      `/tmp/${marker}/b.txt`,
    ])
    expect(existsSync(`/tmp/${marker}`)).toBe(false)
    await sandbox.files.rename(`/tmp/${marker}/b.txt`, `/tmp/${marker}/c.txt`)
    expect(await sandbox.files.exists(`/tmp/${marker}/c.txt`)).toBe(true)
    await expect(sandbox.files.rename(`/tmp/${marker}/c.txt`, 'c.txt')).rejects.toThrow(
      /different file systems/,
    )
    await sandbox.files.remove(`/tmp/${marker}`)
    expect((await sandbox.commands.run(`ls /tmp/${marker} 2>&1 || true`)).stdout).toMatch(/No such file/)
  })

  it('never follows a link out of /tmp, and reaches nothing else outside /home/user', async () => {
    await sandbox.commands.run('ln -sfn /etc /tmp/etc-link && ln -sfn /home/user /tmp/home-link')
    await expect(sandbox.files.read('/tmp/etc-link/passwd')).rejects.toThrow(/link/)
    await expect(sandbox.files.write('/tmp/home-link/x.txt', 'x')).rejects.toThrow(/link/)
    await expect(sandbox.files.read('/tmp/../etc/passwd')).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(sandbox.files.read('/etc/passwd')).rejects.toBeInstanceOf(InvalidArgumentError)
    const listed = Object.fromEntries((await sandbox.files.list('/tmp')).map((e) => [e.name, e]))
    expect(listed['etc-link']).toMatchObject({ type: 'symlink', symlinkTarget: '/etc' })
  })
})

describe('E2B SDK: watching a folder', () => {
  it('reports create, write, chmod, rename and remove, in subfolders made later too', async () => {
    await sandbox.files.makeDir('watched')
    const events: string[] = []
    const handle = await sandbox.files.watchDir('watched', (e) => void events.push(`${e.type}:${e.name}`), {
      recursive: true,
    })
    const seen = (event: string) => waitFor(() => events.includes(event), { what: `${event} in ${events}` })
    try {
      await sandbox.commands.run('echo one > watched/a.txt')
      await seen(`${FilesystemEventType.CREATE}:a.txt`)
      await seen(`${FilesystemEventType.WRITE}:a.txt`)
      await sandbox.commands.run('echo two >> watched/a.txt')
      await waitFor(() => events.filter((e) => e === 'write:a.txt').length >= 2, {
        what: `a second write in ${events}`,
      })
      await sandbox.commands.run('chmod 600 watched/a.txt')
      await seen('chmod:a.txt')
      await sandbox.commands.run('mv watched/a.txt watched/b.txt')
      await seen('rename:a.txt')
      await seen('create:b.txt')
      await sandbox.commands.run('mkdir -p watched/sub/deeper && echo x > watched/sub/deeper/c.txt')
      await seen('create:sub')
      await seen('create:sub/deeper/c.txt')
      await sandbox.commands.run('rm watched/b.txt watched/sub/deeper/c.txt')
      await seen('remove:b.txt')
      await seen('remove:sub/deeper/c.txt')
    } finally {
      await handle.stop()
    }
  })

  it('gives the entry with an event when asked, and refuses a file or a missing folder', async () => {
    await sandbox.files.makeDir('watched-entry')
    let entry: { name: string; path: string } | undefined
    const handle = await sandbox.files.watchDir(
      'watched-entry',
      (e) => {
        if (e.type === FilesystemEventType.WRITE && e.entry) entry = e.entry
      },
      { includeEntry: true },
    )
    try {
      await sandbox.files.write('watched-entry/e.txt', 'entry')
      const found = await waitFor(() => entry, { what: 'a write event with its entry' })
      expect(found).toMatchObject({ name: 'e.txt', path: '/home/user/watched-entry/e.txt', size: 5 })
    } finally {
      await handle.stop()
    }
    await sandbox.files.write('plain.txt', 'x')
    await expect(sandbox.files.watchDir('plain.txt', () => {})).rejects.toThrow(/not a directory/)
    await expect(sandbox.files.watchDir('nowhere', () => {})).rejects.toThrow(/not found/)
  })
})

describe('E2B SDK: signed file URLs', () => {
  it('downloads and uploads through URLs that name no sandbox, by their signature alone', async () => {
    await sandbox.files.write('signed.txt', 'hello world')
    const download = await sandbox.downloadUrl('signed.txt', { useSignatureExpiration: 60 })
    expect(new URL(download).origin).toBe(e2b.url)
    expect(new URL(download).searchParams.get('signature')).toMatch(/^v1_/)
    const got = await fetch(download)
    expect(got.status).toBe(200)
    expect(await got.text()).toBe('hello world')

    const upload = await sandbox.uploadUrl('uploaded/file.txt', { useSignatureExpiration: 60 })
    const form = new FormData()
    form.append('file', new Blob(['uploaded content']))
    const put = await fetch(upload, { method: 'POST', body: form })
    expect(await put.json()).toEqual([
      { name: 'file.txt', type: 'file', path: '/home/user/uploaded/file.txt' },
    ])
    expect(await sandbox.files.read('uploaded/file.txt')).toBe('uploaded content')
    // A plain form field, as E2B's own test sends it, is the file's content too.
    const field = new FormData()
    field.append('file', 'from a field')
    const upField = await fetch(await sandbox.uploadUrl('field.txt'), { method: 'POST', body: field })
    expect(await upField.json()).toEqual([{ name: 'field.txt', type: 'file', path: '/home/user/field.txt' }])
    expect(await sandbox.files.read('field.txt')).toBe('from a field')
  })

  it('refuses an expired signature, a changed path and a signature for reading used to write', async () => {
    const expired = await sandbox.downloadUrl('signed.txt', { useSignatureExpiration: -10 })
    const refused = await fetch(expired)
    expect(refused.status).toBe(401)
    expect(await refused.json()).toEqual({ code: 401, message: 'signature is already expired' })

    const other = new URL(await sandbox.downloadUrl('signed.txt'))
    other.searchParams.set('path', 'other.txt')
    expect((await fetch(other)).status).toBe(401)

    const read = await sandbox.downloadUrl('signed.txt')
    const write = await fetch(read, { method: 'POST', body: new FormData() })
    expect(write.status).toBe(401)
    expect(await sandbox.files.read('signed.txt')).toBe('hello world')
  })
})
