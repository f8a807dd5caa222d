/**
 * `analyst doctor`'s checks of data sources: those given with `--data` and those of
 * ANALYST_SOURCES (serve's). Each opens on its own, so one that fails does not hide the others; a
 * role that can change data is a warning that says to use a read-only one (the role is the real
 * barrier), a source that cannot be opened a failure with what to do.
 * @module
 */
import { AnalystError } from '../../errors.js'
import type { Check } from '../../sandbox/local/checks.js'
import { loadSourcesFile, READ_ONLY_ROLE_HINT, type SourceSpec, Sources } from '../../sources/index.js'
import { splitDataArgs } from '../data-args.js'

export async function sourceChecks(
  data: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<Check[]> {
  const checks: Check[] = []
  let specs: SourceSpec[]
  try {
    specs = [
      ...(await splitDataArgs([...data], options)).sources,
      ...[...loadSourcesFile(options.env).values()].map((named) => named.spec),
    ]
  } catch (error) {
    // A URL or a sources file that cannot be read is a failed check, not a stopped doctor.
    return [failed('sources', error)]
  }
  for (const spec of specs) {
    const name = `source ${spec.name}`
    let sources: Sources | undefined
    try {
      sources = await Sources.open([spec])
      const [found] = await sources.writeAccess()
      const access = found?.access ?? { canWrite: false, reason: 'read-only' }
      checks.push(
        access.canWrite
          ? {
              name,
              ok: false,
              detail: `the role can change data: ${access.reason}`,
              fix: READ_ONLY_ROLE_HINT,
              essential: false,
            }
          : { name, ok: true, detail: `${spec.kind}, read-only: ${access.reason}`, essential: false },
      )
    } catch (error) {
      checks.push(failed(name, error))
    } finally {
      await sources?.close()
    }
  }
  return checks
}

function failed(name: string, error: unknown): Check {
  const message = error instanceof Error ? error.message : String(error)
  const hint = AnalystError.isInstance(error) ? error.hint : undefined
  return { name, ok: false, detail: message, ...(hint ? { fix: hint } : {}), essential: true }
}
