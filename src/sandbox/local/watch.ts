/**
 * Folder watches on the host's side of a workspace, on inotify (fs.watch). Each folder is opened
 * without following links and watched through /proc/self/fd, so a link that code plants cannot
 * turn a watch on the host's own files. fs.watch says only that a name appeared or went
 * ('rename') or that its content or attributes changed ('change'); what happened is read from
 * the entry before and after, in envd's words: create, write, remove, rename, chmod.
 * @module
 */
import {
  closeSync,
  constants,
  type FSWatcher,
  lstatSync,
  openSync,
  readdirSync,
  type Stats,
  watch,
} from 'node:fs'
import type { DoWatchOptions, FolderWatch, WatchEvent } from '../backend.js'
import { countInotifyEvent } from './changes.js'
import type { Workspace } from './workspace.js'

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW
/** Folders one recursive watch follows (an inotify watch each) and entries it keeps in mind. */
const MAX_FOLDERS = 4096
const MAX_ENTRIES = 50_000

interface Seen {
  ino: number
  dir: boolean
  size: number
  mtimeMs: number
  mode: number
  uid: number
  gid: number
}

interface Folder {
  fd: number
  watcher: FSWatcher
  /** Relative to the watched folder ('' for itself). */
  relative: string
  children: Map<string, Seen>
}

function seen(stat: Stats): Seen {
  return {
    ino: stat.ino,
    dir: stat.isDirectory(),
    size: stat.size,
    mtimeMs: stat.mtimeMs,
    mode: stat.mode,
    uid: stat.uid,
    gid: stat.gid,
  }
}

function lstatAt(fd: number, name: string): Stats | undefined {
  try {
    return lstatSync(`/proc/self/fd/${fd}/${name}`)
  } catch {
    return undefined
  }
}

/** Watches `path` in the workspace; throws when it is not a folder there. */
export function watchFolder(workspace: Workspace, path: string, options: DoWatchOptions): FolderWatch {
  const folders = new Map<string, Folder>()
  let entries = 0
  let stopped = false
  /** Names with events since the last flush, per folder, and the kinds of event. */
  const pending = new Map<Folder, Map<string, Set<string>>>()
  let flushing = false

  const join = (folder: Folder, name: string) => (folder.relative ? `${folder.relative}/${name}` : name)
  const emit = (type: WatchEvent['type'], name: string) => {
    if (!stopped) options.onEvent({ type, name })
  }

  const forget = (relative: string) => {
    for (const [key, folder] of folders) {
      if (relative && key !== relative && !key.startsWith(`${relative}/`)) continue
      folder.watcher.close()
      countInotifyEvent() // its IN_IGNORED takes a place in the queue
      closeSync(folder.fd)
      entries -= folder.children.size
      folders.delete(key)
      pending.delete(folder)
    }
  }

  /** Starts watching an open folder; with `report`, what is in it already comes as create events. */
  const add = (fd: number, relative: string, report: boolean) => {
    let watcher: FSWatcher
    try {
      watcher = watch(`/proc/self/fd/${fd}`, { persistent: false }, (kind, name) => {
        countInotifyEvent()
        if (typeof name === 'string' && name) queue(folder, name, kind)
      })
    } catch (error) {
      closeSync(fd)
      throw error
    }
    const folder: Folder = { fd, watcher, relative, children: new Map() }
    watcher.on('error', () => forget(relative))
    folders.set(relative, folder)
    let names: string[] = []
    try {
      names = readdirSync(`/proc/self/fd/${fd}`)
    } catch {
      // gone already: its parent reports it
    }
    for (const name of names.sort()) {
      if (entries >= MAX_ENTRIES) break
      const stat = lstatAt(fd, name)
      if (!stat) continue
      folder.children.set(name, seen(stat))
      entries++
      if (report) emit('create', join(folder, name))
      if (options.recursive && stat.isDirectory()) descend(folder, name, report)
    }
  }

  const descend = (parent: Folder, name: string, report: boolean) => {
    if (folders.size >= MAX_FOLDERS) return
    let fd: number
    try {
      fd = openSync(`/proc/self/fd/${parent.fd}/${name}`, DIR_FLAGS)
    } catch {
      return // gone, or swapped for a link: not followed
    }
    try {
      add(fd, join(parent, name), report)
    } catch {
      // out of inotify watches: this subfolder goes unwatched
    }
  }

  const queue = (folder: Folder, name: string, kind: string) => {
    if (stopped || folders.get(folder.relative) !== folder) return
    const names = pending.get(folder) ?? new Map<string, Set<string>>()
    pending.set(folder, names)
    const kinds = names.get(name) ?? new Set<string>()
    names.set(name, kinds)
    kinds.add(kind)
    if (!flushing) {
      flushing = true
      // inotify gives a move's two halves in one read: both are in the batch when it is looked at.
      setImmediate(flush)
    }
  }

  const flush = () => {
    flushing = false
    const batch = [...pending].flatMap(([folder, names]) =>
      [...names].map(([name, kinds]) => ({
        folder,
        name,
        kinds,
        was: folder.children.get(name),
        now: lstatAt(folder.fd, name),
      })),
    )
    pending.clear()
    const arrived = new Set(batch.flatMap(({ now, was }) => (now && now.ino !== was?.ino ? [now.ino] : [])))
    for (const { folder, name, kinds, was, now } of batch) {
      if (folders.get(folder.relative) !== folder) continue // forgotten meanwhile
      const relative = join(folder, name)
      if (was && (!now || now.ino !== was.ino)) {
        // Gone from here: moved, when the same inode arrived elsewhere in the watch, else removed.
        if (!now) emit(arrived.has(was.ino) ? 'rename' : 'remove', relative)
        if (was.dir) forget(relative)
        folder.children.delete(name)
        entries--
      }
      if (!now) continue
      if (!was || now.ino !== was.ino) {
        if (entries >= MAX_ENTRIES) continue
        folder.children.set(name, seen(now))
        entries++
        emit('create', relative)
        if (now.isDirectory()) {
          if (options.recursive) descend(folder, name, true)
        } else if (kinds.has('change')) emit('write', relative)
        continue
      }
      const state = seen(now)
      folder.children.set(name, state)
      const attributes = state.mode !== was.mode || state.uid !== was.uid || state.gid !== was.gid
      const content = !state.dir && (state.size !== was.size || state.mtimeMs !== was.mtimeMs)
      // A change that shows neither was a write already seen by an earlier look.
      if (content || (!state.dir && !attributes && kinds.has('change'))) emit('write', relative)
      if (attributes) emit('chmod', relative)
    }
  }

  add(workspace.openFolder(path), '', false)
  return {
    stop() {
      stopped = true
      forget('')
    },
  }
}
