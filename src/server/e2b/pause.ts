/**
 * Pause and resume for the E2B API. A paused sandbox keeps its workspace (copied to the host) and
 * the cells that ran without error; its kernel and processes end. Resuming makes a new sandbox,
 * puts the files back, and replays the cells in order, the way sessions are rebuilt, so variables,
 * imports and functions made by cells come back. What no cell made (running processes, memory of
 * commands, files outside /home/user) does not.
 * @module
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context, Language } from '../../sandbox/index.js'
import type { ServedSandbox } from './served.js'

/** A cell that ran without error: what replay runs again. */
export interface RecordedCell {
  /** The client's id of the context ('default' for the sandbox's own; `default-r` for its default R context). */
  contextId: string
  /** The language, for a cell of a default context. */
  language?: Language
  code: string
  envs?: Record<string, string>
}

/** How long one cell may take when it is replayed. */
const REPLAY_CELL_MS = 10 * 60_000
const HOME = '/home/user'

/** The workspace of a paused sandbox, in a host folder: files by number, and where each goes. */
export class Snapshot {
  private constructor(
    private readonly dir: string,
    private readonly entries: Array<{ path: string; type: 'file' | 'dir' }>,
  ) {}

  /** Copies every file and folder of the workspace (links are not kept). */
  static async take(sandbox: ServedSandbox): Promise<Snapshot> {
    const dir = mkdtempSync(join(tmpdir(), 'analyst-e2b-paused-'))
    const entries: Array<{ path: string; type: 'file' | 'dir' }> = []
    try {
      const walk = async (folder: string) => {
        for (const entry of await sandbox.files.list(folder)) {
          const relative = entry.path.slice(HOME.length + 1)
          if (entry.type === 'dir') {
            entries.push({ path: relative, type: 'dir' })
            await walk(entry.path)
          } else if (entry.type === 'file') {
            writeFileSync(
              join(dir, String(entries.length)),
              await sandbox.files.read(entry.path, { format: 'bytes' }),
            )
            entries.push({ path: relative, type: 'file' })
          }
        }
      }
      await walk(HOME)
    } catch (error) {
      rmSync(dir, { recursive: true, force: true })
      throw error
    }
    return new Snapshot(dir, entries)
  }

  /** Writes the files and folders back. */
  async restore(sandbox: ServedSandbox) {
    for (const [index, entry] of this.entries.entries()) await this.put(sandbox, index, entry)
  }

  /**
   * After replay: what the cells made that was not there at the pause goes, and what they
   * changed (written since `since`) is put back as it was.
   */
  async settle(sandbox: ServedSandbox, since: Date) {
    const kept = new Map(this.entries.map((entry, index) => [entry.path, { ...entry, index }]))
    const walk = async (folder: string): Promise<void> => {
      for (const found of await sandbox.list(folder)) {
        const entry = kept.get(found.path.slice(HOME.length + 1))
        if (!entry || entry.type !== found.type || found.symlinkTarget !== undefined) {
          await sandbox.files.remove(found.path)
          if (entry) await this.put(sandbox, entry.index, entry)
        } else if (entry.type === 'dir') await walk(found.path)
        else if (found.modifiedTime === undefined || found.modifiedTime >= since)
          await this.put(sandbox, entry.index, entry)
      }
    }
    await walk(HOME)
    // Removed by a replayed cell: back in place.
    for (const [index, entry] of this.entries.entries())
      if (!(await sandbox.files.exists(`${HOME}/${entry.path}`))) await this.put(sandbox, index, entry)
  }

  private async put(sandbox: ServedSandbox, index: number, entry: { path: string; type: 'file' | 'dir' }) {
    // data/ is there in every sandbox (the inputs' mount point); only its files are put back.
    if (entry.type === 'dir' && entry.path === 'data') return
    if (entry.type === 'dir') await sandbox.files.makeDir(`${HOME}/${entry.path}`)
    else await sandbox.files.write(`${HOME}/${entry.path}`, readFileSync(join(this.dir, String(index))))
  }

  discard() {
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/**
 * Runs the recorded cells again in a fresh sandbox, each in its context (`contexts` maps the
 * client's ids to the new sandbox's contexts; a default context is the new sandbox's own). A cell
 * that fails now is passed over: the next may not need it.
 */
export async function replay(sandbox: ServedSandbox, cells: RecordedCell[], contexts: Map<string, Context>) {
  for (const cell of cells) {
    const context = contexts.get(cell.contextId)
    await sandbox
      .runCode(cell.code, {
        ...(context ? { context } : cell.language ? { language: cell.language } : {}),
        envs: cell.envs,
        timeoutMs: REPLAY_CELL_MS,
      })
      .catch(() => {})
  }
}
