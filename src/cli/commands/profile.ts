import { type DatasetProfile, formatProfiles, profileFiles } from '../../data/index.js'

export interface ProfileOptions {
  paths: string[]
  json: boolean
  /** Token budget per file for the text form. */
  tokensPerFile?: number
  stdout?: NodeJS.WritableStream
}

/**
 * `analyst profile PATH...`: what the model is told about each file, as text or as JSON. Exit 0 when
 * every file was profiled, 2 when one could not be (its entry says why).
 */
export async function profile(options: ProfileOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const profiles: DatasetProfile[] = await profileFiles(options.paths)
  if (options.json) stdout.write(`${JSON.stringify(profiles, null, 2)}\n`)
  else stdout.write(`${formatProfiles(profiles, { tokensPerFile: options.tokensPerFile })}\n`)
  return profiles.some((p) => p.error !== undefined) ? 2 : 0
}
