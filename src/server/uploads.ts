/**
 * File uploads: multipart/form-data streamed to disk (never held in memory), one file in the
 * field `file`, cut off at a size limit, its name reduced to a safe base name.
 * @module
 */
import { createWriteStream } from 'node:fs'
import { mkdir, rename, rm } from 'node:fs/promises'
import type { IncomingHttpHeaders } from 'node:http'
import { join } from 'node:path'
import { Readable, type Writable } from 'node:stream'
import { finished, pipeline } from 'node:stream/promises'
import busboy from 'busboy'
import {
  DiskFullError,
  InvalidArgumentError,
  isDiskFull,
  TooLargeError,
  UnsupportedMediaError,
} from '../errors.js'

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

/**
 * Writes `file` to `out`. If `out` fails (the disk is full), the rest of `file` is read and
 * dropped: busboy goes on to the end of the form only when its file stream is read to the end, so
 * a stream left unread would leave the request, and its answer, waiting forever.
 */
function drainedInto(file: Readable, out: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    let failed: unknown
    out.on('error', (error) => {
      failed ??= error
      file.unpipe(out)
      file.resume()
    })
    file.on('error', (error) => {
      out.destroy()
      reject(error)
    })
    file.on('end', () => (failed ? reject(failed) : finished(out).then(resolve, reject)))
    file.pipe(out)
  })
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
      drainedInto(stream, createWriteStream(partial, { mode: 0o644 })).then(
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
          reject(
            isDiskFull(error)
              ? new DiskFullError("The server's disk is full: the upload could not be kept", { cause: error })
              : error,
          )
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
