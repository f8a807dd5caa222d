/**
 * The folders a user allowed (`--allow-dir`): the only places from which an MCP client's model may
 * add data files. A path is judged by where it really leads (symbolic links followed), so a link
 * inside an allowed folder that points outside it is refused like any other outside path.
 * @module
 */
import { readdir, realpath, stat } from 'node:fs/promises'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import { formatFromName } from '../data/detect.js'
import { ForbiddenError, InvalidArgumentError, NotFoundError } from '../errors.js'

export class AllowedFolders {
  private constructor(
    /** Each folder's real path. */
    readonly dirs: string[],
  ) {}

  /** No folder: add_data refuses every path. */
  static readonly none = new AllowedFolders([])

  /** The folders' real paths; a folder that does not exist is an error that names it. */
  static async open(dirs: string[], cwd = process.cwd()): Promise<AllowedFolders> {
    const real: string[] = []
    for (const dir of dirs) {
      const path = await realpath(resolve(cwd, dir)).catch(() => undefined)
      if (!path || !(await stat(path)).isDirectory()) {
        throw new InvalidArgumentError(`${dir} is not a folder`, {
          hint: 'Give --allow-dir a folder that exists.',
        })
      }
      real.push(path)
    }
    return new AllowedFolders([...new Set(real)])
  }

  /** The real path of a file the client asked for, if it lies in an allowed folder; else why not. */
  async resolve(path: string): Promise<string> {
    if (this.dirs.length === 0) {
      throw new ForbiddenError('No folder is open to add_data', {
        hint: 'The user can allow one when starting the server (--allow-dir DIR).',
      })
    }
    // A relative path is taken in the first allowed folder.
    const requested = isAbsolute(path) ? path : join(this.dirs[0] as string, path)
    const real = await realpath(requested).catch(() => undefined)
    if (!real) throw new NotFoundError(`No file ${path}`, { hint: this.where() })
    if (!this.dirs.some((dir) => inside(dir, real))) {
      throw new ForbiddenError(`${path} is outside the folders the user allowed`, { hint: this.where() })
    }
    if (!(await stat(real)).isFile()) throw new InvalidArgumentError(`${path} is not a file`)
    return real
  }

  /** Data files in the allowed folders (by their names), for a client's model to choose from. */
  async dataFiles(limit = 100): Promise<string[]> {
    const found: string[] = []
    const walk = async (dir: string, depth: number) => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => [])
      for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
        if (found.length >= limit || entry.name.startsWith('.')) continue
        const path = join(dir, entry.name)
        if (entry.isDirectory() && depth < 3) await walk(path, depth + 1)
        else if (entry.isFile() && formatFromName(entry.name.replace(/\.(gz|zip)$/i, ''))) found.push(path)
      }
    }
    for (const dir of this.dirs) await walk(dir, 0)
    return found
  }

  private where(): string {
    return `Files can be added from: ${this.dirs.join(', ')}`
  }
}

function inside(dir: string, path: string): boolean {
  const rest = relative(dir, path)
  return rest !== '' && !rest.startsWith(`..${sep}`) && rest !== '..' && !isAbsolute(rest)
}
