import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { text as readStream } from 'node:stream/consumers'
import pc from 'picocolors'
import { checkCode, type FileReport, formatViolations } from '../../guard/index.js'
import { UsageError } from '../errors.js'

export interface CheckOptions {
  files: string[]
  json: boolean
  /** Dotted names to allow although a rule forbids them (`subprocess`, `os.system`). */
  allowModules: string[]
  /** The sandbox the code will run in has network. */
  allowNetwork: boolean
  cwd: string
  stdin?: NodeJS.ReadableStream
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
}

async function readSource(file: string, options: CheckOptions): Promise<string> {
  if (file === '-') return readStream(options.stdin ?? process.stdin)
  try {
    return await readFile(resolve(options.cwd, file), 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const message =
      code === 'ENOENT'
        ? `No such file: ${file}`
        : code === 'EISDIR'
          ? `${file} is a directory`
          : `Cannot read ${file} (${code})`
    throw new UsageError(message, 'Give the paths of Python files, or - to read code from stdin.')
  }
}

/** `analyst check`: the guard alone. Exit 1 when any file has a violation, 0 when none. */
export async function check(options: CheckOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const stderr = options.stderr ?? process.stderr
  // Read every file first: a missing file is a usage error, reported before any result.
  const sources: Array<{ file: string; code: string }> = []
  for (const file of options.files) sources.push({ file, code: await readSource(file, options) })
  const policy = { allowModules: options.allowModules, allowNetwork: options.allowNetwork }
  const reports: FileReport[] = []
  for (const { file, code } of sources) reports.push({ file, violations: await checkCode(code, policy) })
  const flagged = reports.filter((report) => report.violations.length > 0)
  if (options.json) {
    stdout.write(`${JSON.stringify(reports)}\n`)
  } else {
    for (const report of flagged) stdout.write(formatViolations(report))
    const count = flagged.reduce((sum, report) => sum + report.violations.length, 0)
    const files = reports.length === 1 ? '1 file' : `${reports.length} files`
    stderr.write(
      count === 0
        ? pc.green(`${files} checked, no violations\n`)
        : pc.red(`${count} violation${count === 1 ? '' : 's'} in ${flagged.length} of ${files}\n`),
    )
  }
  return flagged.length > 0 ? 1 : 0
}
