/**
 * File uploads: multipart/form-data streamed to disk (never held in memory), one file in the
 * field `file`, cut off at a size limit, its name reduced to a safe base name.
 * @module
 */
import { createWriteStream } from 'node:fs'
import { mkdir, rename, rm } from 'node:fs/promises'
import type { IncomingHttpHeaders } from 'node:http'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import busboy from 'busboy'
import { InvalidArgumentError, TooLargeError, UnsupportedMediaError } from '../errors.js'

/** `../../etc/passwd` → `passwd`; control characters and separators go; never empty or dot-only. */
export function safeName(name: string): string {
  const base = name.replace(/\\/g, '/').split('/').pop() ?? ''
  const cleaned = base
    .normalize('NFC')
    // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .replace(/[<>:"|?*]/g, '_')
    .trim()
    .slice(0, 200)
  return cleaned && !/^\.+$/.test(cleaned) ? cleaned : 'upload'
}

/** Streams the request's `file` field into `dir`; resolves to the saved file's name, path and size. */
export async function receiveFile(
  headers: IncomingHttpHeaders,
  body: ReadableStream<Uint8Array> | null,
  dir: string,
  maxBytes: number,
): Promise<{ name: string; path: string; bytes: number }> {
  if (!headers['content-type']?.startsWith('multipart/form-data') || !body) {
    throw new UnsupportedMediaError('Send the file as multipart/form-data in a field named "file"')
  }
  await mkdir(dir, { recursive: true })
  let parser: busboy.Busboy
  try {
    parser = busboy({ headers, limits: { files: 1, fileSize: maxBytes, fields: 10 } })
  } catch (error) {
    throw new InvalidArgumentError(`Malformed upload: ${(error as Error).message}`)
  }
  const saved = new Promise<{ name: string; path: string; bytes: number }>((resolve, reject) => {
    let found = false
    parser.on('file', (field, stream, info) => {
      if (field !== 'file') {
        stream.resume()
        return
      }
      found = true
      const name = safeName(info.filename ?? '')
      const partial = join(dir, `.${name}.${process.pid}.${Date.now()}.part`)
      let bytes = 0
      let truncated = false
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length
      })
      stream.on('limit', () => {
        truncated = true
      })
      pipeline(stream, createWriteStream(partial, { mode: 0o644 })).then(
        async () => {
          if (truncated) {
            await rm(partial, { force: true })
            reject(
              new TooLargeError(`The file is larger than the limit of ${maxBytes} bytes`, {
                hint: 'Upload a smaller file.',
              }),
            )
            return
          }
          if (bytes === 0) {
            await rm(partial, { force: true })
            reject(new InvalidArgumentError('The file is empty', { hint: 'Choose a file with data in it.' }))
            return
          }
          const path = join(dir, name)
          await rename(partial, path)
          resolve({ name, path, bytes })
        },
        async (error: unknown) => {
          await rm(partial, { force: true })
          reject(error)
        },
      )
    })
    parser.on('error', (error: unknown) =>
      reject(new InvalidArgumentError(`Malformed upload: ${(error as Error).message}`)),
    )
    parser.on('close', () => {
      if (!found)
        reject(
          new InvalidArgumentError('No file in the field "file"', {
            hint: 'Send the file in a form field named "file".',
          }),
        )
    })
  })
  saved.catch(() => {}) // rejected before the pipeline below finishes: reported by the await
  await pipeline(Readable.fromWeb(body as never), parser).catch(() => {})
  return saved
}
