/**
 * Blobs as files in a folder (ANALYST_HOME/blobs, or a shared ANALYST_BLOB_DIR): `ab/abcdef…`,
 * named by their SHA-256. A blob is written to a temporary file while it is hashed, then renamed
 * into place, so a reader never sees half a blob and two writers of the same content agree.
 * A writer killed mid-blob leaves its temporary file, named by its host and process (its pid and
 * start, so that a process given the dead writer's pid again, as a restarted container's server
 * often is, is told apart): `forgetPartialBlobs` removes those of this host's processes that are
 * gone (a folder that replicas share: each host's own, at its replica's start).
 * @module
 */
import { randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { markRunning, PROCESS_MARK, processMark } from '../../processes.js'
import { measure, SHA256, toStream } from '../blob-source.js'
import type { BlobInfo, BlobSource, BlobStore } from '../types.js'

/** A temporary file's name: its writer's host and process (processes.ts's mark), then a random part. */
const PART = new RegExp(`^\\.(.+)\\.(${PROCESS_MARK.source})\\.[0-9a-f]{16}\\.part$`)

export class FileBlobStore implements BlobStore {
  readonly specificationVersion = 'v1'
  readonly provider = 'files'

  constructor(readonly dir: string) {}

  localPath(sha256: string): string | undefined {
    return SHA256.test(sha256) ? join(this.dir, sha256.slice(0, 2), sha256) : undefined
  }

  async put(
    source: BlobSource,
    options: { maxBytes?: number; signal?: AbortSignal } = {},
  ): Promise<BlobInfo> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
    const temporary = join(this.dir, `.${hostname()}.${processMark()}.${randomBytes(8).toString('hex')}.part`)
    const measured = measure(options.maxBytes)
    try {
      await pipeline(toStream(source), measured, createWriteStream(temporary, { mode: 0o644 }), {
        signal: options.signal,
      })
      const { sha256, size } = measured.digest()
      const path = this.localPath(sha256) as string
      await mkdir(join(this.dir, sha256.slice(0, 2)), { recursive: true })
      await rename(temporary, path) // the same content under the same name: replacing it changes nothing
      return { sha256, size }
    } finally {
      await rm(temporary, { force: true })
    }
  }

  async forgetPartialBlobs(limit: number): Promise<number> {
    const names = await readdir(this.dir).catch(() => [])
    const here = hostname()
    let forgotten = 0
    for (const name of names) {
      if (forgotten >= limit) break
      const [, host, writer] = name.match(PART) ?? []
      if (host !== here || !writer || markRunning(writer)) continue
      await rm(join(this.dir, name), { force: true })
      forgotten++
    }
    return forgotten
  }

  async get(sha256: string): Promise<Readable | undefined> {
    const path = this.localPath(sha256)
    if (!path || !(await this.stat(sha256))) return undefined
    return createReadStream(path)
  }

  async stat(sha256: string): Promise<BlobInfo | undefined> {
    const path = this.localPath(sha256)
    if (!path) return undefined
    try {
      const info = await stat(path)
      return info.isFile() ? { sha256, size: info.size } : undefined
    } catch {
      return undefined
    }
  }
}
