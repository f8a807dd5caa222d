/**
 * Opening an analysis: profile the data files, hand them to a fresh sandbox in the form its
 * pandas reads, wire the guard, and start a session. Shared by the CLI and the server.
 * @module
 */

import type { DatasetProfile } from '../data/index.js'
import { formatProfiles, prepareForSandbox, profileFiles } from '../data/index.js'
import { InvalidArgumentError } from '../errors.js'
import { checkCode, warmUp } from '../guard/index.js'
import type { CodeMode, ModelChoice } from '../models/index.js'
import { type CreateOpts, Sandbox } from '../sandbox/index.js'
import { type AnalystOptions, AnalystSession } from './analyst.js'

export interface OpenOptions
  extends Omit<AnalystOptions, 'model' | 'mode' | 'sandbox' | 'dataDescription' | 'check'> {
  model: ModelChoice
  /** Overrides the model's default mode. */
  mode?: CodeMode
  /** Host paths of the data files, or path and name. */
  data: Array<string | { path: string; name: string }>
  /** Cells to run first, in order, to rebuild a stored session's state (their errors are ignored). */
  replay?: string[]
  /** Apply the static guard to the model's code. @default true */
  guard?: boolean
  /** Options of the sandbox (provider, limits, isolation…). */
  sandbox?: CreateOpts
  signal?: AbortSignal
}

export interface OpenedAnalysis {
  session: AnalystSession
  sandbox: Sandbox
  profiles: DatasetProfile[]
  /** Cells re-run to rebuild a stored session, and how many of them failed this time. */
  replayed: { ran: number; failed: number }
  close(): Promise<void>
}

export async function openAnalysis(options: OpenOptions): Promise<OpenedAnalysis> {
  // The parser loads while the files are profiled, not during the first step.
  const guardReady = options.guard === false ? undefined : warmUp().catch(() => {})
  const profiles = await profileFiles(options.data, { signal: options.signal })
  const failed = profiles.filter((profile) => profile.error)
  if (failed.length > 0) {
    throw new InvalidArgumentError(failed.map((profile) => `${profile.path}: ${profile.error}`).join('\n'), {
      hint: 'Fix or leave out the files that cannot be read.',
    })
  }
  const names = profiles.map((profile) => profile.name)
  const duplicate = names.find((name, index) => names.indexOf(name) !== index)
  if (duplicate) {
    throw new InvalidArgumentError(`Two data files would both be data/${duplicate} in the sandbox`, {
      hint: 'Rename one of them.',
    })
  }
  const files = await Promise.all(
    profiles.map((profile) => prepareForSandbox(profile, { signal: options.signal })),
  )
  const sandbox = await Sandbox.create({
    ...options.sandbox,
    data: files.map((file) => ({ path: file.hostPath, name: file.name })),
  })
  const replayed = { ran: 0, failed: 0 }
  try {
    for (const cell of options.replay ?? []) {
      const execution = await sandbox.runCode(cell, { timeoutMs: 300_000, signal: options.signal })
      replayed.ran++
      if (execution.error) replayed.failed++
    }
  } catch (error) {
    await sandbox.kill()
    throw error
  }
  const {
    model,
    mode,
    guard = true,
    data: _data,
    sandbox: _sandbox,
    signal: _signal,
    replay: _replay,
    ...rest
  } = options
  const session = new AnalystSession({
    ...rest,
    model: model.model,
    modelName: model.spec,
    mode: mode ?? model.mode,
    sandbox,
    dataDescription: formatProfiles(profiles),
    // A sandbox with network may use it: the guard is told so.
    check: guard ? (code) => checkCode(code, { allowNetwork: options.sandbox?.network === true }) : undefined,
  })
  await guardReady
  return { session, sandbox, profiles, replayed, close: () => sandbox.kill() }
}
