/**
 * The files of E2B's COPY steps: the SDK asks whether a step's filesHash is present, and if not
 * uploads a tar of the files to the URL it is given (a PUT without its API key, so the URL carries
 * a one-time secret). Kept per owner under ANALYST_HOME/template-files, by the hash the client
 * gave: a client can only ever fill its own cache, never another's.
 *
 * A tar from a client is unpacked into a build's folder with regular files and folders only (no
 * links, devices or paths out of it), within a size cap, so a COPY cannot reach a host file.
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'
import { createWriteStream, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import * as tar from 'tar'
import { InvalidArgumentError, NotFoundError, TooLargeError } from '../../errors.js'

const HASH = /^[0-9a-f]{64}$/
/** How long an upload URL stays good. */
const UPLOAD_TTL_MS = 15 * 60_000

interface PendingUpload {
  owner: string | null
  hash: string
  expires: number
}

export class TemplateFiles {
  readonly #pending = new Map<string, PendingUpload>()

  constructor(
    private readonly root: string,
    /** The largest upload, and the most its files may unpack to. */
    private readonly maxBytes = 1024 ** 3,
  ) {}

  #dir(owner: string | null): string {
    const key = createHash('sha256')
      .update(owner ?? '')
      .digest('hex')
      .slice(0, 32)
    return join(this.root, key)
  }

  #path(owner: string | null, hash: string): string {
    if (!HASH.test(hash)) throw new InvalidArgumentError(`"${hash}" is not a files hash (a sha256 in hex)`)
    return join(this.#dir(owner), `${hash}.tar`)
  }

  present(owner: string | null, hash: string): boolean {
    return existsSync(this.#path(owner, hash))
  }

  /** A one-time secret for the upload URL of this owner's files of `hash`. */
  uploadSecret(owner: string | null, hash: string): string {
    this.#path(owner, hash)
    const now = Date.now()
    for (const [key, pending] of this.#pending) if (pending.expires < now) this.#pending.delete(key)
    const secret = randomBytes(24).toString('base64url')
    this.#pending.set(secret, { owner, hash, expires: now + UPLOAD_TTL_MS })
    return secret
  }

  /** Receives the tar of an upload URL (gzipped or not, as the SDK sends it). */
  async receive(secret: string, hash: string, body: ReadableStream<Uint8Array> | null): Promise<void> {
    const pending = this.#pending.get(secret)
    if (!pending || pending.hash !== hash || pending.expires < Date.now())
      throw new NotFoundError('This upload URL is not valid or has expired: ask for the files hash again')
    this.#pending.delete(secret)
    if (!body) throw new InvalidArgumentError('The upload has no body')
    const path = this.#path(pending.owner, hash)
    mkdirSync(this.#dir(pending.owner), { recursive: true })
    const temp = `${path}.${randomBytes(4).toString('hex')}.part`
    let bytes = 0
    const max = this.maxBytes
    const cap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        bytes += chunk.length
        if (bytes > max) done(new TooLargeError(`The files of a COPY step are over ${max} bytes`))
        else done(null, chunk)
      },
    })
    try {
      await pipeline(Readable.fromWeb(body as never), cap, createWriteStream(temp))
      renameSync(temp, path)
    } catch (error) {
      rmSync(temp, { force: true })
      throw error
    }
  }

  /** Unpacks this owner's files of `hash` into `dir` (regular files and folders only); throws when they are not there. */
  async unpack(owner: string | null, hash: string, dir: string): Promise<void> {
    const path = this.#path(owner, hash)
    if (!existsSync(path))
      throw new NotFoundError(`The files of hash ${hash.slice(0, 12)}… were never uploaded`, {
        hint: 'Build again: the SDK uploads the files that are not here.',
      })
    mkdirSync(dir, { recursive: true })
    let bytes = 0
    let over = false
    await tar.x({
      file: path,
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
    })
    if (over) throw new TooLargeError(`The files of a COPY step unpack to over ${this.maxBytes} bytes`)
  }
}
