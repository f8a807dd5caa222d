import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { create } from 'tar'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NotFoundError, TooLargeError } from '../../errors.js'
import { openStores, type Stores } from '../../store/index.js'
import { TemplateFiles } from './template-files.js'

let work: string
let stores: Stores
beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'analyst-template-files-'))
  stores = await openStores(join(work, 'home'), {})
})
afterAll(async () => {
  await stores?.close()
  rmSync(work, { recursive: true, force: true })
})

/** A gzipped tar of `files` (and a link out of the folder), as E2B's SDK uploads a COPY's files. */
async function upload(files: Record<string, string>): Promise<ReadableStream<Uint8Array>> {
  const dir = mkdtempSync(join(work, 'context-'))
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true })
    writeFileSync(join(dir, path), content)
  }
  symlinkSync('/etc/passwd', join(dir, 'passwd'))
  const tar = create({ cwd: dir, gzip: true }, ['.'])
  return Readable.toWeb(Readable.from(tar)) as ReadableStream<Uint8Array>
}

const hashOf = (text: string) => createHash('sha256').update(text).digest('hex')

describe("E2B COPY files in the store's template files", () => {
  it('an upload URL from one replica takes the files on another, and a third unpacks them; per owner, used once', async () => {
    // Three replicas over one database: the hash check, the upload and the build each reach another.
    const [asked, receiving, building] = [1, 2, 3].map(() => new TemplateFiles(stores.templateFiles))
    const hash = hashOf('greeting')
    expect(await asked?.present('alice', hash)).toBe(false)
    const secret = (await asked?.uploadSecret('alice', hash)) as string
    await receiving?.receive(
      secret,
      hash,
      await upload({ 'greeting.txt': 'hello\n', 'sub/data.csv': 'a,b\n1,2\n' }),
    )
    expect(await building?.present('alice', hash)).toBe(true)
    // Another owner's cache is its own.
    expect(await building?.present('bob', hash)).toBe(false)
    const dir = join(work, 'unpacked')
    await building?.unpack('alice', hash, dir)
    expect(readFileSync(join(dir, 'greeting.txt'), 'utf8')).toBe('hello\n')
    expect(readFileSync(join(dir, 'sub', 'data.csv'), 'utf8')).toBe('a,b\n1,2\n')
    // A link could reach a host file: left out.
    expect(existsSync(join(dir, 'passwd'))).toBe(false)

    const again = await receiving?.receive(secret, hash, await upload({})).catch((e: unknown) => e)
    expect(NotFoundError.isInstance(again), String(again)).toBe(true)
    const missing = await building?.unpack('bob', hash, join(work, 'bob')).catch((e: unknown) => e)
    expect(NotFoundError.isInstance(missing) && (missing as Error).message).toMatch(/were never uploaded/)
  })

  it('an upload over the cap is refused and nothing is kept', async () => {
    const small = new TemplateFiles(stores.templateFiles, 64)
    const hash = hashOf('big')
    const secret = await small.uploadSecret(null, hash)
    const refused = await small
      .receive(secret, hash, await upload({ 'big.txt': 'x'.repeat(100_000) }))
      .catch((e: unknown) => e)
    expect(TooLargeError.isInstance(refused), String(refused)).toBe(true)
    expect(await small.present(null, hash)).toBe(false)
  })
})
