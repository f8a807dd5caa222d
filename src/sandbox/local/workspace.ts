/**
 * The host's side of a sandbox's files: the workspace (read-write for code) and data/ (read-only
 * for code). Code in the sandbox can plant symbolic links and swap folders while the host works,
 * so the host never resolves a path through the workspace: it walks it one component at a time
 * from an open folder (`/proc/self/fd/N/<name>` with O_NOFOLLOW, the equivalent of openat), and
 * so can never be led outside it.
 * @module
 */
import {
  chmodSync,
  closeSync,
  constants,
  copyFileSync,
  fchownSync,
  fstatSync,
  ftruncateSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  renameSync,
  rmdirSync,
  type Stats,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { posix } from 'node:path'
import mime from 'mime-types'
import type { EntryInfo } from '../backend.js'
import { ConflictError, InvalidArgumentError, NotFoundError } from '../errors.js'
import type { Artifact } from '../messaging.js'
import { SANDBOX_HOME, splitPath } from '../paths.js'
import { ChangeTracker, fileState } from './changes.js'
import { at, DIR_FLAGS, entriesOf, inFolder } from './folder-fd.js'

export { splitPath }

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants
/** The most entries one disk count looks at, and how deep it goes. */
const SCAN_LIMIT = 20_000
const SCAN_DEPTH = 32
/** Links followed from one link to find where it points, as the kernel's own limit. */
const MAX_LINK_HOPS = 40

/** `ls -l`'s mode string, as Go's FileMode.String() gives it to E2B (`L` for a link). */
export function permissionString(mode: number): string {
  const type = constants.S_IFMT & mode
  const letter =
    type === constants.S_IFDIR
      ? 'd'
      : type === constants.S_IFLNK
        ? 'L'
        : type === constants.S_IFIFO
          ? 'p'
          : type === constants.S_IFSOCK
            ? 'S'
            : type === constants.S_IFCHR || type === constants.S_IFBLK
              ? 'D'
              : '-'
  let bits = ''
  for (let shift = 6; shift >= 0; shift -= 3) {
    const triplet = (mode >> shift) & 7
    bits += `${triplet & 4 ? 'r' : '-'}${triplet & 2 ? 'w' : '-'}${triplet & 1 ? 'x' : '-'}`
  }
  return letter + bits
}

export function mimeType(name: string): string {
  return mime.lookup(name) || 'application/octet-stream'
}

/**
 * A file-system call's failure on a sandbox path, as what is wrong with the path: names that
 * are too long, a file where a folder is wanted, a fifo with no one at the other end. Anything
 * else (the host's own trouble, a full disk) stays as it is.
 */
function pathError(path: string, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException).code
  const invalid = (what: string) => new InvalidArgumentError(`${path}: ${what}`)
  switch (code) {
    case 'ENOENT':
      return new NotFoundError(`${path}: no such file or folder in the sandbox`)
    case 'ENAMETOOLONG':
      return invalid('a name in it is longer than 255 bytes')
    case 'ENOTDIR':
      return invalid('a part of it is not a folder')
    case 'EISDIR':
      return invalid('it is a folder; name a file')
    case 'ELOOP':
      return invalid('it is a link, which the host does not follow')
    case 'ENXIO':
      return invalid('it is a fifo or a socket, not a file')
    case 'EEXIST':
    case 'ENOTEMPTY':
      return new ConflictError(`${path}: something is there already`)
    case 'EINVAL':
      return invalid('a folder cannot be moved into itself')
    default:
      return error
  }
}

function readOnly(path: string): InvalidArgumentError {
  return new InvalidArgumentError(`${path} is in data/, which is read-only`, {
    hint: 'Write outside data/, e.g. out/.',
  })
}

interface Owner {
  uid: number
  gid: number
}

export class Workspace {
  /** What each cell changed, from inotify watches rather than a walk. */
  private readonly tracker: ChangeTracker

  constructor(
    /** Host folder mounted read-write at SANDBOX_HOME. */
    readonly work: string,
    /** Host folder mounted read-only at SANDBOX_HOME/data. */
    readonly data: string,
    /** Owner of files the host writes in the workspace, so code can change them (root only). */
    readonly owner?: Owner,
    /** Where code sees `work`: the workspace's SANDBOX_HOME, or the jail's SANDBOX_TMP (which has no data/). */
    readonly root: string = SANDBOX_HOME,
  ) {
    this.tracker = new ChangeTracker(work, (parts) => this.openDir(work, parts))
  }

  /** Ends the watches that find a cell's changes. */
  close() {
    this.tracker.close()
  }

  /** Opens the folder `parts` under `base`, never following a link; creates missing ones when asked. */
  private openDir(base: string, parts: string[], create = false): number {
    let fd = openSync(base, DIR_FLAGS)
    try {
      for (const part of parts) {
        let next: number
        try {
          next = openSync(at(fd, part), DIR_FLAGS)
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code
          if (code === 'ENOENT' && create) {
            try {
              mkdirSync(at(fd, part), { mode: 0o755 })
            } catch (error) {
              throw pathError(part, error)
            }
            next = openSync(at(fd, part), DIR_FLAGS)
            if (this.owner) fchownSync(next, this.owner.uid, this.owner.gid)
          } else if (code === 'ENOENT') {
            throw new NotFoundError(`${part}: no such folder in the sandbox`)
          } else if (code === 'ENAMETOOLONG') {
            throw pathError(part, error)
          } else {
            throw new InvalidArgumentError(
              `${part} is not a folder (or is a link, which the host does not follow)`,
            )
          }
        }
        closeSync(fd)
        fd = next
      }
      return fd
    } catch (error) {
      closeSync(fd)
      throw error
    }
  }

  /** Where a path is on the host: its base folder, the folders under it, and its name (none for the base). */
  locate(path: string): {
    base: string
    dirs: string[]
    name: string | undefined
    area: 'work' | 'data'
  } {
    const { area, parts } = splitPath(path, this.root)
    return {
      base: area === 'data' ? this.data : this.work,
      dirs: parts.slice(0, -1),
      name: parts.at(-1),
      area,
    }
  }

  read(path: string): Uint8Array {
    const { base, dirs, name } = this.locate(path)
    if (!name) throw new InvalidArgumentError(`${path} is a folder; read a file`)
    const dir = this.openDir(base, dirs)
    let fd: number
    try {
      fd = openSync(at(dir, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'ENOENT') throw new NotFoundError(`${path}: no such file in the sandbox`)
      throw new InvalidArgumentError(`${path} cannot be read (${code}); links are not followed`)
    } finally {
      closeSync(dir)
    }
    try {
      const stat = fstatSync(fd)
      if (!stat.isFile()) throw new InvalidArgumentError(`${path} is not a regular file`)
      const chunks: Buffer[] = []
      let total = 0
      for (;;) {
        const chunk = Buffer.allocUnsafe(Math.max(65536, Math.min(stat.size - total + 1, 16 << 20)))
        const read = readSync(fd, chunk, 0, chunk.length, null)
        if (read === 0) break
        chunks.push(chunk.subarray(0, read))
        total += read
      }
      return new Uint8Array(Buffer.concat(chunks, total))
    } finally {
      closeSync(fd)
    }
  }

  write(path: string, bytes: Uint8Array): EntryInfo {
    const { base, dirs, name, area } = this.locate(path)
    if (!name) throw new InvalidArgumentError(`${path} names a folder; give a file name`)
    const owner = area === 'work' ? this.owner : undefined
    const dir = this.openDir(base, dirs, true)
    let fd: number
    try {
      try {
        fd = openSync(
          at(dir, name),
          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
          area === 'data' ? 0o644 : 0o644,
        )
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw pathError(path, error)
        try {
          fd = openSync(at(dir, name), O_WRONLY | O_NOFOLLOW | O_NONBLOCK)
        } catch {
          throw new InvalidArgumentError(`${path} exists and is not a regular file`)
        }
      }
    } finally {
      closeSync(dir)
    }
    try {
      if (!fstatSync(fd).isFile()) throw new InvalidArgumentError(`${path} exists and is not a regular file`)
      ftruncateSync(fd, 0)
      let offset = 0
      while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset)
      if (owner) fchownSync(fd, owner.uid, owner.gid)
    } finally {
      closeSync(fd)
    }
    const relative = [...(area === 'data' ? ['data'] : []), ...dirs, name].join('/')
    if (area === 'work') this.remember(relative)
    return { name, type: 'file', path: `${this.root}/${relative}`, size: bytes.length }
  }

  /**
   * A folder's files and folders, by name. With `details`, also its links (never followed on the
   * host) and each entry's mode, owner and time, as E2B's envd lists them.
   */
  list(path: string, options: { details?: boolean } = {}): EntryInfo[] {
    const { area, parts } = splitPath(path, this.root)
    const dir = this.openDir(area === 'data' ? this.data : this.work, parts)
    const prefix = [this.root, ...(area === 'data' ? ['data'] : []), ...parts].join('/')
    try {
      const entries: EntryInfo[] = []
      for (const entry of entriesOf(dir)) {
        if (!entry.isFile && !entry.isDirectory && !(options.details && entry.isLink)) continue
        let stat: Stats
        try {
          stat = lstatSync(at(dir, entry.name))
        } catch {
          continue // removed while we looked
        }
        const path = `${prefix}/${entry.name}`
        entries.push(
          options.details
            ? this.detailed(entry.name, path, stat)
            : {
                name: entry.name,
                type: entry.isFile ? 'file' : 'dir',
                path,
                size: entry.isFile ? stat.size : 0,
              },
        )
      }
      return entries.sort((a, b) => a.name.localeCompare(b.name))
    } finally {
      closeSync(dir)
    }
  }

  stat(path: string, options: { details?: boolean } = {}): EntryInfo | undefined {
    const { base, dirs, name, area } = this.locate(path)
    const relative = [...(area === 'data' ? ['data'] : []), ...dirs, ...(name ? [name] : [])].join('/')
    const full = relative ? `${this.root}/${relative}` : this.root
    if (!name && !options.details)
      return { name: area === 'data' ? 'data' : posix.basename(this.root), type: 'dir', path: full, size: 0 }
    let dir: number
    try {
      dir = this.openDir(base, name ? dirs : [])
    } catch {
      return undefined
    }
    try {
      if (!name)
        return this.detailed(area === 'data' ? 'data' : posix.basename(this.root), full, fstatSync(dir))
      const stat = lstatSync(at(dir, name))
      // With details, any kind of entry (a fifo or a socket too, as envd answers for them).
      if (options.details) return this.detailed(name, full, stat)
      if (!stat.isFile() && !stat.isDirectory()) return undefined
      return { name, type: stat.isFile() ? 'file' : 'dir', path: full, size: stat.size }
    } catch {
      return undefined
    } finally {
      closeSync(dir)
    }
  }

  /** An entry with E2B's details; a link's type and mode are its target's, found without leaving the workspace. */
  private detailed(name: string, path: string, stat: Stats): EntryInfo {
    const entry: EntryInfo = {
      name,
      type: stat.isDirectory() ? 'dir' : 'file',
      path,
      size: stat.size,
      modifiedTime: stat.mtime,
      mode: stat.mode & 0o777,
      permissions: permissionString(stat.mode),
      owner: this.nameOf(stat.uid, this.owner?.uid),
      group: this.nameOf(stat.gid, this.owner?.gid),
    }
    if (stat.isSymbolicLink()) {
      const target = this.linkTarget(path)
      entry.symlinkTarget = target.path
      entry.type = target.stat ? (target.stat.isDirectory() ? 'dir' : 'file') : 'symlink'
      entry.mode = target.stat ? target.stat.mode & 0o777 : 0
    }
    return entry
  }

  /** How code sees a file's owner: `user` for the sandbox's own uid (or this process's, without one). */
  private nameOf(id: number, own = process.getuid?.() ?? -1): string {
    if (id === own) return 'user'
    return id === 0 ? 'root' : String(id)
  }

  /**
   * Where the link at `path` points, as an absolute sandbox path, following further links while
   * they stay in the workspace; `stat` is the final target's when it is a file or folder there.
   */
  private linkTarget(path: string): { path: string; stat?: Stats } {
    let current = path
    for (let hop = 0; hop < MAX_LINK_HOPS; hop++) {
      let located: ReturnType<Workspace['locate']>
      try {
        located = this.locate(current)
      } catch {
        return { path: current } // outside the workspace: not looked at
      }
      if (!located.name) return { path: current }
      let dir: number
      try {
        dir = this.openDir(located.base, located.dirs)
      } catch {
        return { path: current }
      }
      try {
        const stat = lstatSync(at(dir, located.name))
        if (!stat.isSymbolicLink())
          return { path: current, stat: stat.isFile() || stat.isDirectory() ? stat : undefined }
        const target = readlinkSync(at(dir, located.name), 'utf8')
        current = posix.normalize(
          target.startsWith('/') ? target : posix.join(posix.dirname(current), target),
        )
      } catch {
        return { path: current }
      } finally {
        closeSync(dir)
      }
    }
    return { path: current }
  }

  /** Opens a folder of the workspace (or data/) without following links; the caller closes it. */
  openFolder(path: string): number {
    const { area, parts } = splitPath(path, this.root)
    return this.openDir(area === 'data' ? this.data : this.work, parts)
  }

  remove(path: string) {
    const { base, dirs, name } = this.locate(path)
    if (!name) throw new InvalidArgumentError('The workspace itself cannot be removed')
    const dir = this.openDir(base, dirs)
    try {
      removeAt(dir, name)
    } finally {
      closeSync(dir)
    }
  }

  /** Creates a folder and its parents; false when it existed already. */
  makeDir(path: string): boolean {
    const { area, parts } = splitPath(path, this.root)
    if (area === 'data') throw readOnly(path)
    if (parts.length === 0) return false
    const parent = this.openDir(this.work, parts.slice(0, -1), true)
    try {
      const name = parts.at(-1) as string
      try {
        mkdirSync(at(parent, name), { mode: 0o755 })
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw pathError(path, error)
        if (!lstatSync(at(parent, name)).isDirectory()) {
          throw new InvalidArgumentError(`${path} exists and is not a folder`)
        }
        return false
      }
      if (this.owner) {
        const fd = openSync(at(parent, name), DIR_FLAGS)
        try {
          fchownSync(fd, this.owner.uid, this.owner.gid)
        } finally {
          closeSync(fd)
        }
      }
      return true
    } finally {
      closeSync(parent)
    }
  }

  /** Moves a file or folder inside the workspace, creating the destination's parents. */
  rename(from: string, to: string): EntryInfo {
    const source = this.locate(from)
    const target = this.locate(to)
    if (source.area === 'data') throw readOnly(from)
    if (target.area === 'data') throw readOnly(to)
    if (!source.name || !target.name) throw new InvalidArgumentError('The workspace itself cannot be moved')
    const sourceDir = this.openDir(this.work, source.dirs)
    try {
      const targetDir = this.openDir(this.work, target.dirs, true)
      try {
        renameSync(at(sourceDir, source.name), at(targetDir, target.name))
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'ENOENT') throw new NotFoundError(`${from}: no such file in the sandbox`)
        const refused = pathError(`${from} → ${to}`, error)
        if (refused !== error) throw refused
        throw new InvalidArgumentError(`${from} cannot be moved to ${to} (${code})`)
      } finally {
        closeSync(targetDir)
      }
    } finally {
      closeSync(sourceDir)
    }
    // A link, a fifo or a socket has no plain entry: it answers with its details; and something
    // gone at once (code in the sandbox moved it on) with what was moved.
    return (
      this.stat(to) ??
      this.stat(to, { details: true }) ?? {
        name: target.name,
        type: 'file',
        path: [this.root, ...target.dirs, target.name].join('/'),
        size: 0,
      }
    )
  }

  /** Puts a host file at data/<name>: a hard link when it is cheap and safe, else a copy. */
  addData(hostPath: string, name: string): EntryInfo {
    if (!name || name.includes('/') || name === '.' || name === '..' || name.includes('\0')) {
      throw new InvalidArgumentError(`${JSON.stringify(name)} is not a valid file name for data/`)
    }
    let stat: ReturnType<typeof statSync>
    try {
      stat = statSync(hostPath)
    } catch (cause) {
      throw new NotFoundError(`${hostPath}: no such file`, {
        cause,
        hint: 'Check the path of the data file.',
      })
    }
    if (!stat.isFile()) throw new InvalidArgumentError(`${hostPath} is not a regular file`)
    const target = `${this.data}/${name}`
    try {
      unlinkSync(target)
    } catch {
      // nothing there yet
    }
    // A hard link shares the original's permissions: only when sandbox users may read it anyway.
    const linkable = stat.dev === statSync(this.data).dev && (!this.owner || (stat.mode & 0o004) !== 0)
    let linked = false
    if (linkable) {
      try {
        linkSync(hostPath, target)
        linked = true
      } catch {
        // another file system, or protected_hardlinks: copy
      }
    }
    if (!linked) {
      try {
        copyFileSync(hostPath, target, constants.COPYFILE_FICLONE)
      } catch (cause) {
        throw new InvalidArgumentError(`${hostPath} cannot be read`, { cause })
      }
      chmodSync(target, 0o644)
    }
    return { name, type: 'file', path: `${this.root}/data/${name}`, size: stat.size }
  }

  private remember(relative: string) {
    try {
      const parts = relative.split('/')
      const dir = this.openDir(this.work, parts.slice(0, -1))
      try {
        const stat = lstatSync(at(dir, parts.at(-1) as string), { bigint: true })
        if (stat.isFile()) this.tracker.remember(relative, fileState(stat))
      } finally {
        closeSync(dir)
      }
    } catch {
      // gone already
    }
  }

  /** Bytes the workspace's files take on disk (data/ aside), counting at most SCAN_LIMIT entries. */
  diskUsed(): number {
    let budget = SCAN_LIMIT
    let total = 0
    const walk = (fd: number, depth: number) => {
      for (const entry of entriesOf(fd)) {
        if (--budget < 0) return
        try {
          total += lstatSync(at(fd, entry.name)).blocks * 512
        } catch {
          continue // removed while we looked
        }
        if (!entry.isDirectory || depth >= SCAN_DEPTH || (depth === 0 && entry.name === 'data')) continue
        inFolder(fd, entry.name, (child) => walk(child, depth + 1), undefined)
      }
    }
    const root = openSync(this.work, DIR_FLAGS)
    try {
      walk(root, 0)
    } finally {
      closeSync(root)
    }
    return total
  }

  /** Files created or changed since the last call (or write): a cell's artifacts. Links are ignored. */
  async changes(): Promise<Artifact[]> {
    const artifacts: Artifact[] = []
    for (const [relative, size] of await this.tracker.changes()) {
      artifacts.push({ name: relative, path: `${this.root}/${relative}`, size, mimeType: mimeType(relative) })
    }
    return artifacts.sort((a, b) => a.name.localeCompare(b.name))
  }
}

/** Removes `name` in the open folder `dir`, recursing without ever following a link. */
function removeAt(dir: number, name: string | Buffer) {
  let child: number
  try {
    child = openSync(at(dir, name), DIR_FLAGS)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw new NotFoundError(`${name}: no such file in the sandbox`)
    if (code === 'ENAMETOOLONG') throw pathError(String(name), error)
    unlinkSync(at(dir, name)) // a file or a link: the link itself goes, not its target
    return
  }
  try {
    for (const entry of readdirSync(`/proc/self/fd/${child}`, { encoding: 'buffer' })) removeAt(child, entry)
  } finally {
    closeSync(child)
  }
  rmdirSync(at(dir, name))
}
