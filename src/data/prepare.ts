/**
 * The file the sandbox should receive for a profile: the file itself, or, where the sandbox's pandas
 * has no reader for the format (Parquet without pyarrow), a converted copy that the profile's
 * `readCall` reads (see parquet.ts).
 * @module
 */
import type { DatasetProfile, ProfileOptions } from './types.js'

export interface SandboxFile {
  /** The file to hand to the sandbox (`Sandbox.create({ data })` or `sandbox.files.addData`). */
  hostPath: string
  /** Its name in the sandbox: the code reads `data/<name>`. */
  name: string
}

export async function prepareForSandbox(
  profile: DatasetProfile,
  options: Pick<ProfileOptions, 'signal' | 'python'> = {},
): Promise<SandboxFile> {
  // The profile's read call says which file the sandbox needs: the pickled copy, or the file itself.
  if (profile.format === 'parquet' && !profile.error && profile.readCall.startsWith('pd.read_pickle(')) {
    const { convertParquet } = await import('./parquet.js')
    return { hostPath: await convertParquet(profile, options.signal, options.python), name: profile.name }
  }
  return { hostPath: profile.path, name: profile.name }
}
