/**
 * The members of a zip archive and the head of one of them, streamed (yauzl), never the whole archive.
 * Loaded only when a zip file is profiled.
 * @module
 */
import yauzl from 'yauzl'
import { collect, type Head } from './source.js'

export interface ZipMember {
  name: string
  size: number
  compressedSize: number
}

function openZip(path: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(path, { lazyEntries: true, autoClose: false }, (error, zip) => {
      if (error || !zip) reject(error ?? new Error('cannot open the zip file'))
      else resolve(zip)
    })
  })
}

function entries(zip: yauzl.ZipFile): Promise<yauzl.Entry[]> {
  return new Promise((resolve, reject) => {
    const found: yauzl.Entry[] = []
    zip.on('entry', (entry: yauzl.Entry) => {
      found.push(entry)
      zip.readEntry()
    })
    zip.on('end', () => resolve(found))
    zip.on('error', reject)
    zip.readEntry()
  })
}

/** The files (not folders) in a zip archive. */
export async function listZip(path: string): Promise<ZipMember[]> {
  const zip = await openZip(path)
  try {
    return (await entries(zip))
      .filter((entry) => !entry.fileName.endsWith('/'))
      .map((entry) => ({
        name: entry.fileName,
        size: entry.uncompressedSize,
        compressedSize: entry.compressedSize,
      }))
  } finally {
    zip.close()
  }
}

/** The first `limit` bytes of one member of a zip archive. */
export async function zipMemberHead(path: string, member: string, limit: number): Promise<Head> {
  const zip = await openZip(path)
  try {
    const entry = (await entries(zip)).find((e) => e.fileName === member)
    if (!entry) throw new Error(`no member ${member} in the zip file`)
    const stream = await new Promise<NodeJS.ReadableStream & { destroy(): void }>((resolve, reject) => {
      zip.openReadStream(entry, (error, s) => (error || !s ? reject(error) : resolve(s)))
    })
    return await collect(stream, limit)
  } finally {
    zip.close()
  }
}
