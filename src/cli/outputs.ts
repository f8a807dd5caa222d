/**
 * Saving what cells produce to the output folder: images of results, and artifacts copied out of
 * the sandbox. Shared by `run` and `ask`.
 * @module
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join, normalize } from 'node:path'
import type { Artifact, Result } from '../sandbox/index.js'

const IMAGE_FORMATS = [
  ['png', 'png', 'base64'],
  ['jpeg', 'jpg', 'base64'],
  ['svg', 'svg', 'utf8'],
] as const

export class OutputFolder {
  constructor(readonly dir: string) {}

  private async save(
    relative: string,
    data: Uint8Array | string,
    encoding?: BufferEncoding,
  ): Promise<string> {
    const safe = normalize(relative).replace(/^(\.\.(\/|$))+/, '')
    const path = join(this.dir, safe)
    await mkdir(dirname(path), { recursive: true })
    await writeFile(path, data, encoding ? { encoding } : undefined)
    return path
  }

  /** Saves the result's image, if it has one; returns the file's path. */
  async saveImage(result: Result, name: string): Promise<string | undefined> {
    for (const [field, extension, encoding] of IMAGE_FORMATS) {
      const value = result[field]
      if (typeof value === 'string') return this.save(`${name}.${extension}`, value, encoding)
    }
    return undefined
  }

  /** Copies an artifact out of the sandbox (`read` gets its content); returns where it was saved. */
  async saveArtifact(artifact: Artifact, read: (path: string) => Promise<Uint8Array>): Promise<string> {
    const bytes = await read(artifact.name)
    return this.save(join('files', artifact.name), bytes)
  }
}
