/**
 * A session's data files: profiled as pandas will see them, kept as blobs (so any process that
 * reaches the store can resume the session), and handed to a sandbox as host files.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { lstat, mkdir, rename, rm, stat, symlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { type DatasetProfile, prepareForSandbox, profileFiles } from '../data/index.js'
import { InvalidArgumentError, MissingDataError } from '../errors.js'
import type { FindPython } from '../python.js'
import type { BlobStore, StoredDataset } from '../store/index.js'

export interface DataFileInput {
  /** A file on this machine. */
  path: string
  /** Its name in the sandbox (`data/<name>`). @default the path's base name */
  name?: string
}

/** Profiles the files; throws one clear error naming every file that cannot be read as data. */
export async function profileInputs(
  files: DataFileInput[],
  options: { python?: FindPython; signal?: AbortSignal },
): Promise<DatasetProfile[]> {
  const profiles = await profileFiles(
    files.map((file) => ({ path: file.path, name: file.name ?? basename(file.path) })),
    options,
  )
  const failed = profiles.filter((profile) => profile.error)
  if (failed.length > 0) {
    throw new InvalidArgumentError(
      failed.map((profile) => `${profile.name} cannot be read as data: ${profile.error}`).join('\n'),
      { hint: 'Fix or leave out the files that cannot be read.' },
    )
  }
  const names = profiles.map((profile) => profile.name)
  const duplicate = names.find((name, index) => names.indexOf(name) !== index)
  if (duplicate) {
    throw new InvalidArgumentError(`Two data files would both be data/${duplicate} in the sandbox`, {
      hint: 'Rename one of them.',
    })
  }
  return profiles
}

/** Copies being made now, by path: sessions that open at once with the same data share one. */
const copying = new Map<string, Promise<string | undefined>>()

/**
 * A file on this machine with the blob's content: the blob store's own file when it keeps files,
 * else a copy in `cacheDir` (made once, even when many sessions ask at once).
 */
export async function materialize(
  blobs: BlobStore,
  sha256: string,
  cacheDir: string,
): Promise<string | undefined> {
  const local = blobs.localPath?.(sha256)
  if (local) return (await stat(local).catch(() => undefined)) ? local : undefined
  const path = join(cacheDir, sha256)
  if (await stat(path).catch(() => undefined)) return path
  let copy = copying.get(path)
  if (!copy) {
    copy = copyBlob(blobs, sha256, cacheDir, path).finally(() => copying.delete(path))
    copying.set(path, copy)
  }
  return copy
}

async function copyBlob(blobs: BlobStore, sha256: string, cacheDir: string, path: string) {
  const stream = await blobs.get(sha256)
  if (!stream) return undefined
  await mkdir(cacheDir, { recursive: true, mode: 0o700 })
  // Another process may copy the same blob into the same folder: each writes its own part.
  const partial = `${path}.${randomUUID()}.part`
  try {
    await pipeline(stream, createWriteStream(partial, { mode: 0o644 }))
    await rename(partial, path)
  } finally {
    await rm(partial, { force: true })
  }
  return path
}

export interface SandboxDataFile {
  /** The file to hand to the sandbox. */
  path: string
  name: string
  profile: DatasetProfile
}

/**
 * The stored datasets as host files a sandbox can take, their profiles pointing at them. Datasets
 * recorded before blobs (only a host path) are moved into the blob store on the way, once.
 */
export async function sandboxFiles(
  datasets: StoredDataset[],
  context: {
    blobs: BlobStore
    cacheDir: string
    python?: FindPython
    signal?: AbortSignal
    /** Called for a dataset whose content was just moved into the blob store. */
    upgraded?: (dataset: StoredDataset) => Promise<void>
  },
): Promise<SandboxDataFile[]> {
  const files: SandboxDataFile[] = []
  for (const dataset of datasets) {
    // Too large for the sandbox: the host queries it (hostTables).
    if (dataset.profile.sqlTable) continue
    let sha256 = dataset.sha256
    if (!sha256 && dataset.sourcePath && (await stat(dataset.sourcePath).catch(() => undefined))) {
      sha256 = (await context.blobs.put({ path: dataset.sourcePath }, { signal: context.signal })).sha256
      await context.upgraded?.({ ...dataset, sha256 })
    }
    const path = sha256 ? await materialize(context.blobs, sha256, context.cacheDir) : undefined
    if (!path) {
      throw new MissingDataError(`The data file ${dataset.name} of this session is no longer in the store`, {
        fix: { setting: 'data' },
        hint: 'Or start a new session.',
      })
    }
    const profile = { ...dataset.profile, path }
    const prepared = await prepareForSandbox(profile, { signal: context.signal, python: context.python })
    files.push({ path: prepared.hostPath, name: prepared.name, profile })
  }
  return files
}

/** A data file that stays on the host as a SQL table: the table, and the file DuckDB reads. */
export interface HostTable {
  name: string
  /** A host file whose extension says its format (`.csv`, `.parquet`…). */
  path: string
}

/**
 * The datasets too large for the sandbox, as host files for sql(): each blob made a file on this
 * machine, reached through a link named with the file's extension (blobs have none, and DuckDB
 * reads a file by its extension).
 */
export async function hostTables(
  datasets: StoredDataset[],
  context: { blobs: BlobStore; cacheDir: string },
): Promise<HostTable[]> {
  const tables: HostTable[] = []
  for (const dataset of datasets) {
    const name = dataset.profile.sqlTable
    if (!name) continue
    const path = dataset.sha256
      ? await materialize(context.blobs, dataset.sha256, context.cacheDir)
      : undefined
    if (!path || !dataset.sha256) {
      throw new MissingDataError(`The data file ${dataset.name} of this session is no longer in the store`, {
        fix: { setting: 'data' },
        hint: 'Or start a new session.',
      })
    }
    const extension = /(\.[A-Za-z0-9]+)(\.gz)?$/i.exec(dataset.name)?.[0] ?? ''
    const link = join(context.cacheDir, 'tables', `${dataset.sha256}${extension.toLowerCase()}`)
    if (!(await lstat(link).catch(() => undefined))) {
      await mkdir(dirname(link), { recursive: true, mode: 0o700 })
      await symlink(path, link).catch((error: NodeJS.ErrnoException) => {
        // Another session linked it first.
        if (error.code !== 'EEXIST') throw error
      })
    }
    tables.push({ name, path: link })
  }
  return tables
}
