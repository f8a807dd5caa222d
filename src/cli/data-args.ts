/**
 * What `--data` was given: files to put in the sandbox, and sources for sql() on the host
 * (databases by URL). A CSV, Parquet or NDJSON file larger than a kernel should read whole stays
 * on the host as a source that DuckDB queries in place: code reaches it with sql().
 * @module
 */
import { stat } from 'node:fs/promises'
import { resolve } from 'node:path'
import { InvalidArgumentError } from '../errors.js'
import {
  isDatabaseUrl,
  isQueryableFile,
  parseSource,
  type SourceSpec,
  Sources,
  sqlOnlyBytes,
} from '../sources/index.js'

export interface DataArgs {
  /** Files for the sandbox's data/ folder, as given (relative to cwd). */
  files: string[]
  /** Databases, and the files too large for the sandbox. */
  sources: SourceSpec[]
}

export async function splitDataArgs(
  values: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<DataArgs> {
  const env = options.env ?? process.env
  const files: string[] = []
  const sources: SourceSpec[] = []
  for (const value of values) {
    if (isDatabaseUrl(value)) {
      sources.push(parseSource(value, env, options.cwd))
      continue
    }
    const path = resolve(options.cwd, value)
    const size = (await stat(path).catch(() => undefined))?.size
    if (size !== undefined && size > sqlOnlyBytes(env) && isQueryableFile(path)) {
      sources.push(parseSource(path, env, options.cwd))
    } else files.push(value)
  }
  return { files, sources }
}

/**
 * `--data` where every value is a source for sql() (`analyst serve`, whose sessions get files by
 * upload): database URLs, and data files that DuckDB queries in place whatever their size.
 */
export function sourceArgs(
  values: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): SourceSpec[] {
  return values.map((value) => {
    const path = value.replace(/^[A-Za-z_][A-Za-z0-9_]*=/, '')
    if (!isDatabaseUrl(value) && !isQueryableFile(path)) {
      throw new InvalidArgumentError(
        `--data ${value}: analyst serve takes databases and data files to query with SQL`,
        {
          hint: 'Give postgres://…, mysql://…, sqlite:FILE, duckdb:FILE or a CSV, TSV, Parquet or NDJSON file; other files are uploaded to a session.',
        },
      )
    }
    return parseSource(value, options.env ?? process.env, options.cwd)
  })
}

/**
 * The sources opened (each connects once: a wrong URL or password is said now), or none. A source
 * whose role can change data still opens, with a warning on stderr that says to use a read-only role.
 */
export async function openDataSources(
  specs: SourceSpec[],
  options: { home?: string; stderr?: NodeJS.WritableStream } = {},
): Promise<Sources | undefined> {
  if (specs.length === 0) return undefined
  const stderr = options.stderr ?? process.stderr
  return Sources.open(specs, {
    ...(options.home ? { spillDirectory: resolve(options.home, 'spill') } : {}),
    onWarning: (warning) => stderr.write(`analyst: warning: ${warning.message}\n  ${warning.hint}\n`),
  })
}
