/**
 * The description of data files that Analyst's own prompt uses (columns as pandas will see them,
 * types, nulls, ranges, samples, the call that reads each file), for another agent's prompt or its
 * list_data tool.
 * @module
 */
import { type DataFile, formatProfiles, profileFiles } from '../data/index.js'

/** A data file on this machine, as given to `Sandbox.create({ data })`. */
export type DataInput = DataFile

/** The prompt text for these files; one that cannot be read is described as such. */
export async function describeData(
  data: DataInput[],
  options: { signal?: AbortSignal } = {},
): Promise<string> {
  if (data.length === 0) return 'No data files.'
  return formatProfiles(await profileFiles(data, { signal: options.signal }))
}
