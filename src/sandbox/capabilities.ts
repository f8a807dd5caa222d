/**
 * What an engine enforces, and what it does not in words for the user: one list that `doctor`, the
 * command line and the conformance suite all show.
 * @module
 */
import type { SandboxCapabilities, SandboxCreateOptions, SandboxLimits, SandboxProvider } from './backend.js'
import { InvalidArgumentError } from './errors.js'

/** One thing `analyst doctor` checks, for any engine. */
export interface Check {
  name: string
  ok: boolean
  /** What was found. */
  detail: string
  /** The command or step that fixes it. */
  fix?: string
  /** When false, a failure only limits what Analyst can do. */
  essential: boolean
}

const ALL_LIMITS: ReadonlyArray<keyof SandboxLimits> = [
  'memoryBytes',
  'processes',
  'fileSizeBytes',
  'workspaceBytes',
  'cpuSeconds',
  'openFiles',
  'outputBytes',
  'resultBytes',
]

/** The local engine's: everything. */
export const FULL_CAPABILITIES: SandboxCapabilities = {
  networkIsolation: true,
  hostIsolation: true,
  readOnlyData: true,
  limits: ALL_LIMITS,
  fullTeardown: true,
  homeWorkspace: true,
  abortInterrupts: true,
  filesDuringCells: true,
  hostQueries: true,
  terminals: true,
  templates: 'built',
}

export function capabilitiesOf(provider: Pick<SandboxProvider, 'capabilities'>): SandboxCapabilities {
  return provider.capabilities ?? FULL_CAPABILITIES
}

/** One sentence per thing the engine does not enforce; empty when it enforces everything. */
export function missingCapabilities(capabilities: SandboxCapabilities): string[] {
  const missing: string[] = []
  if (!capabilities.networkIsolation) missing.push('network access is not blocked by Analyst')
  if (!capabilities.hostIsolation)
    missing.push("code can read the server's files and environment variables beyond its workspace")
  if (!capabilities.readOnlyData) missing.push('data files are not read-only for code')
  const limits = ALL_LIMITS.filter((limit) => !capabilities.limits.includes(limit))
  if (limits.length > 0) missing.push(`limits not enforced: ${limits.join(', ')}`)
  if (!capabilities.fullTeardown) missing.push('kill() does not end background processes that code started')
  if (!capabilities.homeWorkspace)
    missing.push(
      "code sees its workspace at the engine's own path, not /home/user (the files API still names it /home/user)",
    )
  if (!capabilities.abortInterrupts)
    missing.push('an aborted cell runs on until its timeout (the next cell waits for it)')
  if (!capabilities.filesDuringCells)
    missing.push('the files API and commands wait while a cell runs (they go through the kernel)')
  if (!capabilities.hostQueries) missing.push("code cannot query the host's data sources (sql())")
  if (!capabilities.terminals) missing.push('commands cannot run in a pseudo-terminal (pty)')
  if (capabilities.templates === 'none') missing.push("Analyst's templates cannot be used (--template)")
  if (capabilities.templates === 'named')
    missing.push("a template is the engine's own template of that name, not one of Analyst's store")
  return missing
}

/**
 * Refuses create options that ask for what the engine cannot enforce: a limit given explicitly,
 * a template it has no notion of (or a built one where it takes names). `templateHint` says what
 * to do instead, in the engine's words.
 */
export function assertSupported(
  engine: string,
  capabilities: SandboxCapabilities,
  options: Pick<SandboxCreateOptions, 'limits' | 'template'>,
  templateHint?: string,
) {
  if (options.template !== undefined && capabilities.templates === 'none') {
    throw new InvalidArgumentError(`The ${engine} engine cannot start a sandbox from a template yet`, {
      hint:
        templateHint ?? 'Leave out the template, or use the local engine (--sandbox local), which runs them.',
    })
  }
  if (
    options.template !== undefined &&
    typeof options.template !== 'string' &&
    capabilities.templates === 'named'
  ) {
    throw new InvalidArgumentError(
      `The ${engine} engine starts its own templates by name, not Analyst's built ones`,
      {
        hint: `Pass the name of a template that ${engine} has.`,
      },
    )
  }
  const asked = Object.entries(options.limits ?? {})
    .filter(([, value]) => value !== undefined)
    .map(([key]) => key as keyof SandboxLimits)
  const unsupported = asked.filter((limit) => !capabilities.limits.includes(limit))
  if (unsupported.length > 0) {
    throw new InvalidArgumentError(
      `The ${engine} engine cannot enforce limits.${unsupported.join(', limits.')}`,
      { hint: "Leave them out (the engine's own limits apply) or use the local engine." },
    )
  }
}
