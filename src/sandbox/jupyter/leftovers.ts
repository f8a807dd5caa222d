/**
 * Kernels this machine's Analyst processes started, one small file each, so that the kernels of a
 * process that crashed (and so never deleted them) can be found and shut down by the next one: a
 * Jupyter server keeps a kernel running until someone deletes it.
 * @module
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, hostname } from 'node:os'
import { join } from 'node:path'
import { markRunning, processMark } from '../../processes.js'

export interface KernelRecord {
  /** The server's base URL. */
  url: string
  kernelId: string
  /**
   * The Analyst process that started it, on `host`, by its mark (processes.ts: pid, boot and start
   * tick), so that a later process given its pid (a restarted container's server) is not taken for it.
   */
  process: string
  /** Its pid alone, in the records of an Analyst before the mark. */
  pid?: number
  host: string
  startedAt: string
}

/** ANALYST_HOME (else ~/.analyst)/jupyter-kernels. */
export function defaultRecordDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.ANALYST_HOME || join(homedir(), '.analyst'), 'jupyter-kernels')
}

export class KernelRecords {
  constructor(readonly dir: string) {}

  private file(kernelId: string): string {
    return join(this.dir, `${kernelId.replace(/[^\w.-]/g, '_')}.json`)
  }

  add(url: string, kernelId: string) {
    const record: KernelRecord = {
      url,
      kernelId,
      process: processMark(),
      host: hostname(),
      startedAt: new Date().toISOString(),
    }
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 })
      writeFileSync(this.file(kernelId), JSON.stringify(record), { mode: 0o600 })
    } catch {
      // Not recorded: only the clean-up after a crash is lost, not the sandbox.
    }
  }

  remove(kernelId: string) {
    rmSync(this.file(kernelId), { force: true })
  }

  /** Kernels on `url` whose Analyst process on this host is gone. */
  leftovers(url: string): KernelRecord[] {
    let names: string[]
    try {
      names = readdirSync(this.dir).filter((name) => name.endsWith('.json'))
    } catch {
      return []
    }
    const found: KernelRecord[] = []
    for (const name of names) {
      try {
        const record = JSON.parse(readFileSync(join(this.dir, name), 'utf8')) as KernelRecord
        const mark = record.process ?? String(record.pid)
        if (record.url === url && record.host === hostname() && !markRunning(mark)) found.push(record)
      } catch {
        // being written, or not ours
      }
    }
    return found
  }
}
