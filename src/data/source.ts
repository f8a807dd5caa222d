/**
 * Bytes from a file without holding the file: its head, pieces at given offsets, the head of a
 * gzip stream. (Zip archives: zip.ts.)
 * @module
 */
import { createReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { createGunzip } from 'node:zlib'

export interface Head {
  bytes: Buffer
  /** The whole content was read. */
  complete: boolean
}

/** The first `limit` bytes of a file. */
export async function readHead(path: string, limit: number): Promise<Head> {
  const handle = await open(path, 'r')
  try {
    const { size } = await handle.stat()
    const length = Math.min(size, limit)
    const bytes = Buffer.allocUnsafe(length)
    let filled = 0
    while (filled < length) {
      const { bytesRead } = await handle.read(bytes, filled, length - filled, filled)
      if (bytesRead === 0) break
      filled += bytesRead
    }
    return { bytes: bytes.subarray(0, filled), complete: filled >= size }
  } finally {
    await handle.close()
  }
}

/** Pieces of `length` bytes at each offset (shorter at the end of the file). */
export async function readPieces(path: string, offsets: number[], length: number): Promise<Buffer[]> {
  const handle = await open(path, 'r')
  try {
    const pieces: Buffer[] = []
    for (const offset of offsets) {
      const piece = Buffer.allocUnsafe(length)
      const { bytesRead } = await handle.read(piece, 0, length, offset)
      pieces.push(piece.subarray(0, bytesRead))
    }
    return pieces
  } finally {
    await handle.close()
  }
}

export async function collect(
  stream: NodeJS.ReadableStream & { destroy(): void },
  limit: number,
): Promise<Head> {
  const chunks: Buffer[] = []
  let total = 0
  let complete = true
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      chunks.push(chunk)
      total += chunk.length
      if (total >= limit) {
        complete = false
        break
      }
    }
  } finally {
    stream.destroy()
  }
  const bytes = Buffer.concat(chunks)
  return { bytes: complete ? bytes : bytes.subarray(0, limit), complete }
}

/** The first `limit` bytes of a gzip file's content. */
export async function gunzipHead(path: string, limit: number): Promise<Head> {
  const gunzip = createGunzip()
  const file = createReadStream(path)
  file.on('error', (error) => gunzip.destroy(error))
  file.pipe(gunzip)
  try {
    return await collect(gunzip, limit)
  } finally {
    file.destroy()
  }
}

/**
 * The uncompressed size a gzip file records in its last four bytes (modulo 4 GiB, and only for the
 * last member): a hint for estimating rows, never trusted for more.
 */
export async function gzipSizeHint(path: string, compressedSize: number): Promise<number | undefined> {
  if (compressedSize < 18) return undefined
  const [tail] = await readPieces(path, [compressedSize - 4], 4)
  if (!tail || tail.length < 4) return undefined
  return tail.readUInt32LE(0)
}
