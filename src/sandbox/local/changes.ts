/**
 * What a cell created or changed in a workspace, found without walking it: an inotify watch on
 * each folder (fs.watch through /proc/self/fd, so a planted link cannot turn a watch on the
 * host's own files) collects the names that had events, and a look after the cell reads only
 * those. A file is a change when its size, time or inode differ from what was last seen, as a
 * walk would find. The look walks the whole workspace instead when events may have been lost:
 * the first time, when this process's inotify queue may have overflowed (libuv drops the
 * overflow notice), or when the workspace has more folders than are watched. inotify misses
 * writes through mmap and through another hard link to the same file; a walk finds those.
 * @module
 */
import {
  type BigIntStats,
  closeSync,
  type FSWatcher,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  watch,
} from 'node:fs'
import { at, DIR_FLAGS, entriesOf, inFolder } from './folder-fd.js'

/** Folders watched in one workspace (an inotify watch each), files kept in mind, names noted between looks. */
const MAX_FOLDERS = 4096
const MAX_FILES = 500_000
const MAX_NOTED = 100_000
/** Without watches, a walk looks at this many entries at most; files beyond are not reported. */
const WALK_LIMIT = 20_000
/** Folders deeper than this are not looked into. */
const MAX_DEPTH = 32

/** How many events the kernel's inotify queue holds before it drops the rest. */
const QUEUE_LENGTH = (() => {
  try {
    return Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8')) || 16_384
  } catch {
    return 16_384
  }
})()
let eventsDelivered = 0

/**
 * Counts an event of any fs.watch in this process: they all share libuv's one inotify queue, and
 * a queue that overflowed has delivered at least QUEUE_LENGTH events since.
 */
export function countInotifyEvent(count = 1) {
  eventsDelivered += count
}

/**
 * Resolves after the event loop has polled once more: the cell's events were queued before its
 * end was told, so by then their callbacks have run. (An immediate set from an immediate runs
 * after the next poll.)
 */
function afterPoll(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)))
}

/** A file's state as compared between looks. */
function stateOf(stat: { size: bigint; mtimeNs: bigint; ino: bigint }): string {
  return `${stat.size}:${stat.mtimeNs}:${stat.ino}`
}

/** What one look found changed: a path relative to the workspace → its size. */
export type Changed = Map<string, number>

interface Watched {
  watcher: FSWatcher
  /** Inode and birth time: an inode number alone can be given again to the next new folder. */
  identity: string
}

const identityOf = (stat: BigIntStats) => `${stat.ino}:${stat.birthtimeNs}`

interface Scan {
  /** Last seen files, per folder, to compare with. */
  previous: Map<string, Map<string, string>>
  changed: Changed
  watching: boolean
  budget: number
}

const parentOf = (relative: string) => relative.slice(0, Math.max(0, relative.lastIndexOf('/')))
const nameOf = (relative: string) => relative.slice(relative.lastIndexOf('/') + 1)
const join = (folder: string, name: string) => (folder ? `${folder}/${name}` : name)
const depthOf = (relative: string) => (relative ? relative.split('/').length : 0)

export class ChangeTracker {
  /** Last seen state of each file, per folder (relative to the workspace, '' for its top). */
  private files = new Map<string, Map<string, string>>()
  private fileCount = 0
  private readonly folders = new Map<string, Watched>()
  /** Names with events since the last look. */
  private noted = new Set<string>()
  /** 'watch' once the first look set the watches; 'walk' when the workspace is too big to watch. */
  private mode: 'start' | 'watch' | 'walk' | 'closed' = 'start'
  /** Events may have been lost: the next look walks. */
  private lost = false
  private eventsAtLook = 0
  /** Looks that walked the whole workspace. */
  walks = 0

  constructor(
    /** The workspace on the host. */
    private readonly work: string,
    /** Opens a folder of the workspace without following links (Workspace's own walk). */
    private readonly openFolder: (parts: string[]) => number,
  ) {}

  /** A file the host wrote: not a change of the next cell's. */
  remember(relative: string, state: string) {
    this.setFile(parentOf(relative), nameOf(relative), state)
  }

  /** Files created or changed since the last look (or since the host wrote them). */
  async changes(): Promise<Changed> {
    if (this.mode === 'closed') return new Map()
    if (this.mode === 'watch') await afterPoll()
    // With a margin: events of watches ended elsewhere in this process take places uncounted.
    const overflowed = eventsDelivered - this.eventsAtLook >= QUEUE_LENGTH / 2
    if (this.mode !== 'watch' || this.lost || overflowed) return this.walk()
    this.eventsAtLook = eventsDelivered
    return this.look()
  }

  /** Ends the watches. */
  close() {
    this.mode = 'closed'
    this.unwatchAll()
  }

  /** Reads the names noted since the last look, parents first. */
  private look(): Changed {
    const changed: Changed = new Map()
    const noted = [...this.noted].sort((a, b) => depthOf(a) - depthOf(b))
    this.noted = new Set()
    const opened = new Map<string, number | undefined>()
    const folderFd = (relative: string) => {
      if (opened.has(relative)) return opened.get(relative)
      let fd: number | undefined
      const watched = this.folders.get(relative)
      if (watched) {
        try {
          fd = this.openFolder(relative ? relative.split('/') : [])
          // Another folder at that path now: its own parent's events tell of it.
          if (identityOf(fstatSync(fd, { bigint: true })) !== watched.identity) {
            closeSync(fd)
            fd = undefined
          }
        } catch {
          fd = undefined
        }
      }
      opened.set(relative, fd)
      return fd
    }
    const scan: Scan = { previous: this.files, changed, watching: true, budget: MAX_FILES - this.fileCount }
    try {
      for (const relative of noted) {
        const fd = folderFd(parentOf(relative))
        if (fd !== undefined && !this.refresh(fd, relative, scan)) return this.walk()
      }
    } finally {
      for (const fd of opened.values()) if (fd !== undefined) closeSync(fd)
    }
    return changed
  }

  /** Brings one noted name up to date; false when the workspace grew past what is watched. */
  private refresh(folderFd: number, relative: string, scan: Scan): boolean {
    const folder = parentOf(relative)
    const name = nameOf(relative)
    let stat: BigIntStats | undefined
    try {
      stat = lstatSync(at(folderFd, name), { bigint: true })
    } catch {
      stat = undefined
    }
    if (!stat?.isDirectory()) {
      if (this.folders.has(relative)) this.forget(relative)
      if (stat?.isFile()) this.compare(folder, name, stat, scan)
      else if (this.files.get(folder)?.delete(name)) this.fileCount--
      return true
    }
    if (this.files.get(folder)?.delete(name)) this.fileCount--
    if (!folder && name === 'data') return true // the read-only input mount
    const watched = this.folders.get(relative)
    if (watched?.identity === identityOf(stat)) return true // its own attributes
    if (watched) this.forget(relative)
    if (depthOf(relative) > MAX_DEPTH) return true
    // Gone again, or swapped for a link: its parent's events tell.
    return inFolder(folderFd, name, (fd) => this.scan(fd, relative, scan), true)
  }

  /** Every file of the workspace, compared with what was seen; sets the watches when it can. */
  private walk(): Changed {
    this.walks++
    this.unwatchAll()
    const previous = this.files
    this.files = new Map()
    this.fileCount = 0
    this.noted = new Set()
    this.lost = false
    this.eventsAtLook = eventsDelivered
    const watching = this.mode !== 'walk'
    const scan: Scan = { previous, changed: new Map(), watching, budget: watching ? MAX_FILES : WALK_LIMIT }
    const root = openSync(this.work, DIR_FLAGS)
    try {
      const complete = this.scan(root, '', scan)
      if (watching && !complete) this.unwatchAll()
      if (watching) this.mode = complete ? 'watch' : 'walk'
    } finally {
      closeSync(root)
    }
    return scan.changed
  }

  /** Watches an open folder, then compares what is in it; false when a limit was reached. */
  private scan(fd: number, relative: string, scan: Scan): boolean {
    if (scan.watching && !this.watch(fd, relative)) return false
    const depth = depthOf(relative)
    for (const entry of entriesOf(fd)) {
      if (--scan.budget < 0) return false
      if (entry.isDirectory) {
        if (!relative && entry.name === 'data') continue
        if (depth >= MAX_DEPTH) continue
        const name = join(relative, entry.name)
        if (!inFolder(fd, entry.name, (child) => this.scan(child, name, scan), true)) return false
      } else if (entry.isFile) {
        try {
          const stat = lstatSync(at(fd, entry.name), { bigint: true })
          if (stat.isFile()) this.compare(relative, entry.name, stat, scan)
        } catch {
          // removed while we looked
        }
      }
    }
    return true
  }

  private compare(
    folder: string,
    name: string,
    stat: { size: bigint; mtimeNs: bigint; ino: bigint },
    scan: Scan,
  ) {
    const state = stateOf(stat)
    if (scan.previous.get(folder)?.get(name) !== state)
      scan.changed.set(join(folder, name), Number(stat.size))
    this.setFile(folder, name, state)
  }

  private setFile(folder: string, name: string, state: string) {
    let files = this.files.get(folder)
    if (!files) {
      files = new Map()
      this.files.set(folder, files)
    }
    if (!files.has(name)) this.fileCount++
    files.set(name, state)
  }

  private watch(fd: number, relative: string): boolean {
    if (this.folders.size >= MAX_FOLDERS) return false
    const watched: Watched = {
      watcher: undefined as unknown as FSWatcher,
      identity: identityOf(fstatSync(fd, { bigint: true })),
    }
    try {
      // Events on the folder itself come named as the watched path's last part: '.', which no entry is.
      watched.watcher = watch(`/proc/self/fd/${fd}/.`, { persistent: false }, (kind, name) => {
        countInotifyEvent()
        if (typeof name !== 'string' || !name) return
        if (name === '.') {
          // Moved or removed: whatever folder is at its path next is looked at afresh.
          if (kind === 'rename') watched.identity = ''
          if (relative) this.note(relative)
        } else this.note(join(relative, name))
      })
    } catch {
      return false // out of inotify watches
    }
    watched.watcher.on('error', () => {
      this.lost = true
    })
    this.folders.set(relative, watched)
    return true
  }

  private note(relative: string) {
    if (this.noted.size >= MAX_NOTED) this.lost = true
    else this.noted.add(relative)
  }

  /** Ends a watch; its end takes a place in the queue too (IN_IGNORED), uncounted by any callback. */
  private unwatch(watched: Watched) {
    watched.watcher.close()
    countInotifyEvent()
  }

  /** Stops watching a folder and what is under it, and forgets their files. */
  private forget(relative: string) {
    const under = `${relative}/`
    for (const [key, watched] of this.folders) {
      if (key !== relative && !key.startsWith(under)) continue
      this.unwatch(watched)
      this.folders.delete(key)
    }
    for (const [key, files] of this.files) {
      if (key !== relative && !key.startsWith(under)) continue
      this.fileCount -= files.size
      this.files.delete(key)
    }
  }

  private unwatchAll() {
    for (const watched of this.folders.values()) this.unwatch(watched)
    this.folders.clear()
  }
}

export { stateOf as fileState }
