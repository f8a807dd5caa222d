/**
 * Blobs in the database (with PostgreSQL when no shared ANALYST_BLOB_DIR is given): content in
 * chunks of 256 KiB, written under a part key while it is hashed and renamed to its SHA-256 in the
 * transaction that writes its record (a reader sees the whole blob or none), read back one chunk at
 * a time. Never whole in memory, on the way in or out. A writer killed mid-blob leaves its part's
 * chunks: `forgetPartialBlobs` forgets them when their writer is gone (parts.ts).
 * @module
 */
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Kysely } from 'kysely'
import { measure, SHA256, toStream } from '../blob-source.js'
import type { BlobInfo, BlobSource, BlobStore } from '../types.js'
import { CHUNK_KEY, type ChunkTable, forgetPartial, withPart } from './parts.js'
import type { Database } from './schema.js'
import type { SqlRuntime } from './store.js'

export const CHUNK_BYTES = 256 * 1024

/**
 * A stream's content written as numbered chunks of CHUNK_BYTES (the last one shorter), each by
 * `insert`, one after the other: never more than a chunk or two in memory.
 */
export function chunkWriter(insert: (seq: number, data: Buffer) => Promise<unknown>): Writable {
  let pending: Buffer[] = []
  let pendingBytes = 0
  let seq = 0
  /** Writes whole chunks (and, at the end, the rest). */
  const flush = async (end: boolean) => {
    let buffered = Buffer.concat(pending, pendingBytes)
    while (buffered.length >= CHUNK_BYTES || (end && buffered.length > 0)) {
      const data = buffered.subarray(0, CHUNK_BYTES)
      buffered = buffered.subarray(data.length)
      await insert(seq++, data)
    }
    pending = [buffered]
    pendingBytes = buffered.length
  }
  return new Writable({
    write: (chunk: Buffer, _encoding, done) => {
      pending.push(chunk)
      pendingBytes += chunk.length
      if (pendingBytes < CHUNK_BYTES) return done()
      flush(false).then(() => done(), done)
    },
    final: (done) => {
      flush(true).then(() => done(), done)
    },
  })
}

/** The content `chunkWriter` wrote under `key` in `table`, read back one chunk at a time. */
export function chunkReader(db: Kysely<Database>, table: ChunkTable, key: string): Readable {
  return Readable.from(
    (async function* () {
      for (let seq = 0; ; seq++) {
        // One shape for both tables: typed as blob_chunks.
        const row = await db
          .selectFrom(table as 'blob_chunks')
          .select('data')
          .where(CHUNK_KEY[table] as 'blob', '=', key)
          .where('seq', '=', seq)
          .executeTakeFirst()
        if (!row) return
        yield Buffer.from(row.data)
      }
    })(),
  )
}

export class SqlBlobStore implements BlobStore {
  readonly specificationVersion = 'v1'
  readonly provider: string

  constructor(
    private readonly db: Kysely<Database>,
    private readonly runtime: Pick<SqlRuntime, 'rowLocks'>,
    provider = 'sql',
  ) {
    this.provider = provider
  }

  put(source: BlobSource, options: { maxBytes?: number; signal?: AbortSignal } = {}): Promise<BlobInfo> {
    return withPart(this.db, this.runtime, 'blob_chunks', async (db, part) => {
      const measured = measure(options.maxBytes)
      const writer = chunkWriter((seq, data) =>
        db.insertInto('blob_chunks').values({ blob: part, seq, data }).execute(),
      )
      await pipeline(toStream(source), measured, writer, { signal: options.signal })
      const { sha256, size } = measured.digest()
      await db.transaction().execute(async (trx) => {
        const created = await trx
          .insertInto('blobs')
          .values({ sha256, size, created_at: new Date().toISOString() })
          .onConflict((oc) => oc.column('sha256').doNothing())
          .returning('sha256')
          .executeTakeFirst()
        // New content takes the chunks just written; content already here keeps its own.
        if (created)
          await trx.updateTable('blob_chunks').set({ blob: sha256 }).where('blob', '=', part).execute()
      })
      return { sha256, size }
    })
  }

  forgetPartialBlobs(limit: number): Promise<number> {
    return forgetPartial(this.db, this.runtime, 'blob_chunks', limit)
  }

  async get(sha256: string): Promise<Readable | undefined> {
    const info = await this.stat(sha256)
    if (!info) return undefined
    return chunkReader(this.db, 'blob_chunks', sha256)
  }

  async stat(sha256: string): Promise<BlobInfo | undefined> {
    if (!SHA256.test(sha256)) return undefined
    const row = await this.db
      .selectFrom('blobs')
      .select('size')
      .where('sha256', '=', sha256)
      .executeTakeFirst()
    return row ? { sha256, size: Number(row.size) } : undefined
  }
}
