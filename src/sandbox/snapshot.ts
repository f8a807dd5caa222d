/**
 * Artifacts on engines whose workspace the host cannot see (E2B, Modal): one listing of the
 * workspace's files (size and time) after each cell, compared with the one before.
 * @module
 */
import mime from 'mime-types'
import type { Artifact } from './messaging.js'
import { SANDBOX_HOME } from './paths.js'

/** A shell command that lists the workspace's files outside data/: `path\tsize\tmtime` lines. */
export const WORKSPACE_LISTING = `find ${SANDBOX_HOME} -path ${SANDBOX_HOME}/data -prune -o -type f -printf '%P\\t%s\\t%T@\\n' 2>/dev/null | head -n 20000`

/** The listing's output → path → `size:mtime`. */
export function parseListing(text: string): Map<string, string> {
  const files = new Map<string, string>()
  for (const line of text.split('\n')) {
    const [name, size, time] = line.split('\t')
    if (name && size !== undefined) files.set(name, `${size}:${time}`)
  }
  return files
}

/** The files new or changed since `before`, as artifacts, by name. */
export function changedFiles(before: Map<string, string>, now: Map<string, string>): Artifact[] {
  const changed: Artifact[] = []
  for (const [name, state] of now) {
    if (before.get(name) === state) continue
    changed.push({
      name,
      path: `${SANDBOX_HOME}/${name}`,
      size: Number(state.split(':')[0]),
      mimeType: mime.lookup(name) || 'application/octet-stream',
    })
  }
  return changed.sort((a, b) => a.name.localeCompare(b.name))
}
