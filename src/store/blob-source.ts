/**
 * What every blob store does with content on its way in: one stream from any `BlobSource`, and its
 * SHA-256 and size counted as it passes, cut off at a size limit.
 * @module
 */
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { Readable, Transform } from 'node:stream'
import { TooLargeError } from '../errors.js'
import type { BlobSource } from './types.js'

export function toStream(source: BlobSource): Readable {
  if (source instanceof Uint8Array) return Readable.from([source])
  if ('path' in source && typeof source.path === 'string' && !(source instanceof Readable))
    return createReadStream(source.path)
  return source instanceof Readable ? source : Readable.from(source as AsyncIterable<Uint8Array>)
}

/** A pass-through that hashes and counts; `digest()` once the stream has ended. */
export function measure(maxBytes?: number): Transform & { digest(): { sha256: string; size: number } } {
  const hash = createHash('sha256')
  let size = 0
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length
      if (maxBytes !== undefined && size > maxBytes) {
        done(
          new TooLargeError(`The file is larger than the limit of ${maxBytes} bytes`, {
            hint: 'Use a smaller file.',
          }),
        )
        return
      }
      hash.update(chunk)
      done(null, chunk)
    },
  })
  return Object.assign(transform, { digest: () => ({ sha256: hash.digest('hex'), size }) })
}

export const SHA256 = /^[0-9a-f]{64}$/
