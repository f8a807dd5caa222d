/**
 * Files that templates need on every replica (E2B COPY uploads, built templates' exports) in the
 * history database, in chunks as blobs are (blobs.ts): written under a part key while they are
 * hashed, moved to their key in the transaction that writes their record (a reader sees the whole
 * file or none), read back one chunk at a time and checked against their SHA-256 at the end. Unlike
 * blobs they are kept by key, not by content, so that they can be replaced and expired.
 *
 * A writer killed mid-file leaves its part's chunks: `forgetPartialTemplateFiles` forgets them
 * when their writer is gone (parts.ts).
 * Times are the database's clock, the one clock every replica reads.
 * @module
 */
import { createHash } from 'node:crypto'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Kysely, Selectable } from 'kysely'
import { AnalystError } from '../../errors.js'
import { measure } from '../blob-source.js'
import type { StoredTemplateFile, TemplateFileStore } from '../types.js'
import { chunkReader, chunkWriter } from './blobs.js'
import { forgetPartial, withPart } from './parts.js'
import type { Database, TemplateFilesTable } from './schema.js'
import type { SqlRuntime } from './store.js'

function toFile(row: Selectable<TemplateFilesTable>): StoredTemplateFile {
  return {
    key: row.key,
    ...(row.name !== null ? { name: row.name } : {}),
    size: Number(row.size),
    sha256: row.sha256,
    createdAt: row.created_at,
  }
}

export class SqlTemplateFileStore implements TemplateFileStore {
  readonly specificationVersion = 'v1'

  constructor(
    private readonly db: Kysely<Database>,
    private readonly runtime: Pick<SqlRuntime, 'nowMs' | 'rowLocks'>,
  ) {}

  async databaseTimeMs(): Promise<number> {
    const row = await this.db.selectNoFrom(this.runtime.nowMs.as('ms')).executeTakeFirstOrThrow()
    return Number(row.ms)
  }

  async putTemplateFile(
    key: string,
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    options: { name?: string; maxBytes?: number } = {},
  ): Promise<StoredTemplateFile> {
    return withPart(this.db, this.runtime, 'template_file_chunks', (db, part) =>
      this.#put(db, key, source, options, part),
    )
  }

  async #put(
    db: Kysely<Database>,
    key: string,
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    options: { name?: string; maxBytes?: number },
    part: string,
  ): Promise<StoredTemplateFile> {
    const measured = measure(options.maxBytes)
    const writer = chunkWriter((seq, data) =>
      db.insertInto('template_file_chunks').values({ file: part, seq, data }).execute(),
    )
    await pipeline(Readable.from(source), measured, writer)
    const { sha256, size } = measured.digest()
    const name = options.name ?? null
    const createdAt = new Date(await this.databaseTimeMs()).toISOString()
    await db.transaction().execute(async (trx) => {
      // The file this one replaces, and the older file of its name.
      const old = await trx
        .selectFrom('template_files')
        .select('key')
        .where((eb) => eb.or([eb('key', '=', key), ...(name ? [eb('name', '=', name)] : [])]))
        .execute()
      const keys = old.map((row) => row.key)
      if (keys.length > 0) {
        await trx.deleteFrom('template_file_chunks').where('file', 'in', keys).execute()
        await trx.deleteFrom('template_files').where('key', 'in', keys).execute()
      }
      await trx
        .insertInto('template_files')
        .values({ key, name, size, sha256, created_at: createdAt })
        .execute()
      await trx.updateTable('template_file_chunks').set({ file: key }).where('file', '=', part).execute()
    })
    return (await this.statTemplateFile(key)) as StoredTemplateFile
  }

  forgetPartialTemplateFiles(limit: number): Promise<number> {
    return forgetPartial(this.db, this.runtime, 'template_file_chunks', limit)
  }

  async statTemplateFile(key: string): Promise<StoredTemplateFile | undefined> {
    const row = await this.db
      .selectFrom('template_files')
      .selectAll()
      .where('key', '=', key)
      .executeTakeFirst()
    return row ? toFile(row) : undefined
  }

  async readTemplateFile(key: string): Promise<Readable | undefined> {
    const file = await this.statTemplateFile(key)
    if (!file) return undefined
    const chunks = chunkReader(this.db, 'template_file_chunks', key)
    const hash = createHash('sha256')
    const check = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk)
        done(null, chunk)
      },
      flush(done) {
        // Replaced or expired while it was read: its chunks are another file's, or gone.
        done(
          hash.digest('hex') === file.sha256
            ? null
            : new AnalystError(`The template file ${key} changed while it was read: read it again`),
        )
      },
    })
    chunks.on('error', (error) => check.destroy(error))
    return chunks.pipe(check)
  }

  async namedTemplateFile(name: string): Promise<StoredTemplateFile | undefined> {
    const row = await this.db
      .selectFrom('template_files')
      .selectAll()
      .where('name', '=', name)
      .orderBy('created_at', 'desc')
      .executeTakeFirst()
    return row ? toFile(row) : undefined
  }

  async forgetTemplateFiles(prefix: string, before: string): Promise<number> {
    // The prefixes are the callers' own ("copy:", "template:"), never a client's.
    if (/[%_\\]/.test(prefix)) throw new AnalystError(`"${prefix}" has a LIKE wildcard in it`)
    const old = await this.db
      .selectFrom('template_files')
      .select('key')
      .where('key', 'like', `${prefix}%`)
      .where('created_at', '<', before)
      .execute()
    if (old.length === 0) return 0
    const keys = old.map((row) => row.key)
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('template_file_chunks').where('file', 'in', keys).execute()
      await trx.deleteFrom('template_files').where('key', 'in', keys).execute()
    })
    return keys.length
  }
}
