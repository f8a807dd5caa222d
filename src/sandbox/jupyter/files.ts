/**
 * A sandbox's files on a Jupyter engine, two ways: the server's Contents API where it has one
 * (it works while a cell runs), and the kernel itself where it has none (Enterprise Gateway).
 * Paths here are relative to the sandbox's workspace folder; `''` is the workspace.
 * @module
 */
import { InvalidArgumentError, NotFoundError, SandboxError } from '../../errors.js'
import type { ExecuteReply } from './channel.js'
import type { JupyterHttp } from './http.js'
import { MODULE } from './prelude.js'

export interface FileEntry {
  name: string
  type: 'file' | 'dir'
  size: number
}

export interface WorkspaceFiles {
  /** `contents` or `kernel`: what `doctor` and errors tell. */
  readonly via: 'contents' | 'kernel'
  /** Bytes per request when a file moves in pieces. */
  readonly chunkBytes: number
  read(path: string): Promise<Uint8Array>
  /** Writes in pieces (`append` for every piece after the first), so large files stream. */
  write(path: string, data: Uint8Array, append: boolean): Promise<void>
  list(path: string): Promise<FileEntry[]>
  stat(path: string): Promise<FileEntry | undefined>
}

const MiB = 1024 * 1024

function notFound(path: string) {
  return new NotFoundError(`${path || '.'}: no such file in the sandbox`)
}

interface ContentsModel {
  name: string
  type: 'file' | 'directory' | 'notebook'
  size?: number | null
  content?: unknown
}

/** Through `/api/contents`, relative to the workspace folder in the server's root. */
export class ContentsFiles implements WorkspaceFiles {
  readonly via = 'contents'
  readonly chunkBytes = 8 * MiB
  constructor(
    private readonly http: JupyterHttp,
    private readonly folder: string,
  ) {}

  private url(path: string): string {
    const parts = [this.folder, ...path.split('/').filter(Boolean)]
    return `api/contents/${parts.map(encodeURIComponent).join('/')}`
  }

  private async get(path: string, query: string): Promise<ContentsModel | undefined> {
    const { status, body } = await this.http.request<ContentsModel>('GET', `${this.url(path)}?${query}`, {
      accept: [404],
    })
    return status === 404 ? undefined : body
  }

  async read(path: string): Promise<Uint8Array> {
    const model = await this.get(path, 'type=file&format=base64&content=1').catch((error) => {
      // The Contents API answers 400 when asked for a folder as a file.
      if (/HTTP 400/.test(String(error))) throw new InvalidArgumentError(`${path} is not a regular file`)
      throw error
    })
    if (!model) throw notFound(path)
    return new Uint8Array(Buffer.from(String(model.content ?? ''), 'base64'))
  }

  async write(path: string, data: Uint8Array, append: boolean): Promise<void> {
    const parts = path.split('/')
    const body = {
      type: 'file',
      format: 'base64',
      content: Buffer.from(data).toString('base64'),
      // The server's large-file manager appends numbered chunks; -1 marks a last one.
      ...(append ? { chunk: 2 } : {}),
    }
    if (!append) {
      for (let depth = 1; depth < parts.length; depth++) {
        const folder = parts.slice(0, depth).join('/')
        const found = await this.stat(folder)
        if (!found) await this.http.request('PUT', this.url(folder), { body: { type: 'directory' } })
        else if (found.type !== 'dir') throw new InvalidArgumentError(`${folder} is a file, not a folder`)
      }
    }
    await this.http.request('PUT', this.url(path), { body, timeoutMs: 120_000 })
  }

  async list(path: string): Promise<FileEntry[]> {
    const model = await this.get(path, 'type=directory&content=1').catch((error) => {
      if (/HTTP 400/.test(String(error))) throw new InvalidArgumentError(`${path} is not a folder`)
      throw error
    })
    if (!model) throw new NotFoundError(`${path || '.'}: no such folder in the sandbox`)
    const entries = (Array.isArray(model.content) ? model.content : []) as ContentsModel[]
    return entries.map(toEntry).sort((a, b) => a.name.localeCompare(b.name))
  }

  async stat(path: string): Promise<FileEntry | undefined> {
    const model = await this.get(path, 'content=0')
    return model && toEntry(model)
  }
}

function toEntry(model: ContentsModel): FileEntry {
  const type = model.type === 'directory' ? 'dir' : 'file'
  return { name: model.name, type, size: type === 'file' ? (model.size ?? 0) : 0 }
}

/** A string, number or boolean as Python source (a JSON string or number is a valid Python literal). */
export function pythonLiteral(value: string | number | boolean): string {
  if (typeof value === 'boolean') return value ? 'True' : 'False'
  return JSON.stringify(value)
}

/**
 * The JSON answer of a prelude call made in a silent request's user expressions (the prelude's
 * `Json` values). A Python exception becomes `known(ename, evalue)`'s error, else a SandboxError.
 */
export function kernelAnswer<T>(
  reply: ExecuteReply,
  what: string,
  known: (ename?: string, evalue?: string) => Error | undefined = () => undefined,
): T {
  const answer = reply.user_expressions?.result
  if (!answer) throw new SandboxError(`The kernel did not answer (${what})`)
  if (answer.status !== 'ok') {
    throw (
      known(answer.ename, answer.evalue) ??
      new SandboxError(`${what} failed in the kernel: ${answer.ename}: ${answer.evalue}`)
    )
  }
  return JSON.parse(String(answer.data?.['text/plain'])) as T
}

/** Runs one file operation of the prelude (`op(kind, path, ...)`) in the kernel; resolves with its JSON answer. */
export type KernelOp = (expression: string) => Promise<ExecuteReply>

/** Through the kernel: the prelude's `op()`, called in a silent request's user expressions. */
export class KernelFiles implements WorkspaceFiles {
  readonly via = 'kernel'
  /** A request travels in one WebSocket message, which Tornado caps at 10 MiB (base64 adds a third). */
  readonly chunkBytes = 4 * MiB
  constructor(private readonly run: KernelOp) {}

  async call<T>(kind: string, path: string, ...args: Array<string | number | boolean>): Promise<T> {
    const call = `${MODULE}.op(${[kind, path, ...args].map(pythonLiteral).join(', ')})`
    return kernelAnswer<T>(await this.run(call), `${kind} ${path}`, (ename, evalue) => {
      if (ename === 'FileNotFoundError') return notFound(path)
      if (ename === 'PermissionError') return new InvalidArgumentError(`${path}: ${evalue}`)
      if (ename === 'IsADirectoryError') return new InvalidArgumentError(`${path} is not a regular file`)
      if (ename === 'NotADirectoryError')
        return new InvalidArgumentError(`${path}: a part of it is not a folder`)
      return undefined
    })
  }

  async read(path: string): Promise<Uint8Array> {
    const pieces: Buffer[] = []
    for (let offset = 0; ; offset += this.chunkBytes) {
      const piece = Buffer.from(await this.call<string>('read', path, offset, this.chunkBytes), 'base64')
      pieces.push(piece)
      if (piece.length < this.chunkBytes) break
    }
    return new Uint8Array(Buffer.concat(pieces))
  }

  async write(path: string, data: Uint8Array, append: boolean): Promise<void> {
    await this.call('write', path, Buffer.from(data).toString('base64'), append)
  }

  list(path: string): Promise<FileEntry[]> {
    return this.call<FileEntry[]>('list', path)
  }

  async stat(path: string): Promise<FileEntry | undefined> {
    return (await this.call<FileEntry | null>('stat', path)) ?? undefined
  }
}
