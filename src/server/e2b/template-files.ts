/**
 * The files of E2B's COPY steps: the SDK asks whether a step's filesHash is present, and if not
 * uploads a tar of the files to the URL it is given (a PUT without its API key, so the URL carries
 * a one-time secret). Kept per owner, by the hash the client gave (a client can only ever fill its
 * own cache, never another's), in the shared database (the store's template files): behind a load
 * balancer without affinity the hash check, the upload and the build may each reach another
 * replica. A COPY's files are kept for a day (the SDK uploads them again when they are missing);
 * an upload URL for 15 minutes.
 *
 * A tar from a client is unpacked into a build's folder with regular files and folders only (no
 * links, devices or paths out of it), within a size cap, so a COPY cannot reach a host file.
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { Readable } from 'node:stream'
import { json } from 'node:stream/consumers'
import { pipeline } from 'node:stream/promises'
import * as tar from 'tar'
import { InvalidArgumentError, NotFoundError, TooLargeError } from '../../errors.js'
import type { TemplateFileStore } from '../../store/types.js'

const HASH = /^[0-9a-f]{64}$/
/** How long an upload URL stays good. */
const UPLOAD_TTL_MS = 15 * 60_000
/** How long a COPY's files are kept. */
const FILES_TTL_MS = 24 * 3600_000

/** What an upload URL's secret stands for, kept under `upload:<its SHA-256>`. */
interface PendingUpload {
  owner: string | null
  hash: string
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

export class TemplateFiles {
  constructor(
    private readonly store: TemplateFileStore,
    /** The largest upload, and the most its files may unpack to. */
    private readonly maxBytes = 1024 ** 3,
  ) {}

  #key(owner: string | null, hash: string): string {
    if (!HASH.test(hash)) throw new InvalidArgumentError(`"${hash}" is not a files hash (a sha256 in hex)`)
    return `copy:${sha256(owner ?? '').slice(0, 32)}:${hash}`
  }

  async present(owner: string | null, hash: string): Promise<boolean> {
    return (await this.store.statTemplateFile(this.#key(owner, hash))) !== undefined
  }

  /** A one-time secret for the upload URL of this owner's files of `hash`, good on any replica. */
  async uploadSecret(owner: string | null, hash: string): Promise<string> {
    this.#key(owner, hash)
    const now = Date.now()
    await this.store.forgetTemplateFiles('upload:', new Date(now - UPLOAD_TTL_MS).toISOString())
    await this.store.forgetTemplateFiles('copy:', new Date(now - FILES_TTL_MS).toISOString())
    const secret = randomBytes(24).toString('base64url')
    const pending: PendingUpload = { owner, hash }
    await this.store.putTemplateFile(`upload:${sha256(secret)}`, [Buffer.from(JSON.stringify(pending))])
    return secret
  }

  /** Receives the tar of an upload URL (gzipped or not, as the SDK sends it). */
  async receive(secret: string, hash: string, body: ReadableStream<Uint8Array> | null): Promise<void> {
    const key = `upload:${sha256(secret)}`
    const stored = await this.store.statTemplateFile(key)
    const fresh = stored && Date.parse(stored.createdAt) > Date.now() - UPLOAD_TTL_MS
    const content = fresh ? await this.store.readTemplateFile(key) : undefined
    const pending = content ? ((await json(content)) as PendingUpload) : undefined
    if (!pending || pending.hash !== hash)
      throw new NotFoundError('This upload URL is not valid or has expired: ask for the files hash again')
    // Used once: a prefix that is the whole key.
    await this.store.forgetTemplateFiles(key, new Date(Date.now() + 60_000).toISOString())
    if (!body) throw new InvalidArgumentError('The upload has no body')
    await this.store
      .putTemplateFile(this.#key(pending.owner, hash), Readable.fromWeb(body as never), {
        maxBytes: this.maxBytes,
      })
      .catch((error: unknown) => {
        throw TooLargeError.isInstance(error)
          ? new TooLargeError(`The files of a COPY step are over ${this.maxBytes} bytes`)
          : error
      })
  }

  /** Unpacks this owner's files of `hash` into `dir` (regular files and folders only); throws when they are not there. */
  async unpack(owner: string | null, hash: string, dir: string): Promise<void> {
    const content = await this.store.readTemplateFile(this.#key(owner, hash))
    if (!content)
      throw new NotFoundError(`The files of hash ${hash.slice(0, 12)}… were never uploaded`, {
        hint: 'Build again: the SDK uploads the files that are not here.',
      })
    mkdirSync(dir, { recursive: true })
    let bytes = 0
    let over = false
    await pipeline(
      content,
      tar.x({
        cwd: dir,
        strict: true,
        preservePaths: false,
        preserveOwner: false,
        filter: (_path, entry) => {
          const type = (entry as { type?: string }).type
          if (type !== 'File' && type !== 'OldFile' && type !== 'Directory') return false
          bytes += (entry as { size?: number }).size ?? 0
          if (bytes > this.maxBytes) over = true
          return !over
        },
      }),
    )
    if (over) throw new TooLargeError(`The files of a COPY step unpack to over ${this.maxBytes} bytes`)
  }
}
