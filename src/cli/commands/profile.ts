import { type DatasetProfile, formatProfiles, profileFiles } from '../../data/index.js'
import type { SourceProfile } from '../../sources/index.js'
import { openDataSources, splitDataArgs } from '../data-args.js'

export interface ProfileOptions {
  /** Data files, and sources as `--data` takes them (URL, NAME=URL, `${VAR}` in a password). */
  paths: string[]
  json: boolean
  /** Token budget per file for the text form. */
  tokensPerFile?: number
  cwd?: string
  env?: NodeJS.ProcessEnv
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
}

/**
 * `analyst profile PATH|URL...`: what the model is told about each file (as pandas will read it)
 * and each database or large file queried in place (its tables in full), as text or as JSON. Exit
 * 0 when everything was profiled, 2 when a file could not be (its entry says why); a source that
 * cannot be opened fails the command with a message that says what to do.
 */
export async function profile(options: ProfileOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const cwd = options.cwd ?? process.cwd()
  const given = await splitDataArgs(options.paths, { cwd, env: options.env })
  const sources = await openDataSources(given.sources, { stderr: options.stderr })
  try {
    // As given: a profile names its file the way the user did.
    const profiles: DatasetProfile[] = given.files.length > 0 ? await profileFiles(given.files) : []
    if (options.json) {
      const described: SourceProfile[] = sources ? await sources.profile() : []
      stdout.write(`${JSON.stringify([...profiles, ...described], null, 2)}\n`)
    } else {
      const parts = [
        profiles.length > 0 ? formatProfiles(profiles, { tokensPerFile: options.tokensPerFile }) : '',
        sources ? await sources.describeAll() : '',
      ]
      stdout.write(`${parts.filter(Boolean).join('\n\n')}\n`)
    }
    return profiles.some((p) => p.error !== undefined) ? 2 : 0
  } finally {
    await sources?.close()
  }
}
