/**
 * Fixes that work on this machine: the distribution (from /etc/os-release), whether it packages
 * what a fix would install (apt-cache, or a table of known gaps when apt has no package lists
 * yet), and the command or the other way when it does not. `analyst doctor`, the data readers and
 * the kernel's start-up errors take their install hints from here.
 * @module
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import type { EXPECTED_MODULES } from './python.js'

const isRoot = process.geteuid?.() === 0

export interface Distribution {
  /** `debian`, `ubuntu`, `fedora`… */
  id: string
  /** `12`, `24.04`; absent on rolling releases. */
  versionId?: string
  /** What to call it: `Debian GNU/Linux 12 (bookworm)`. */
  name: string
  /** The distributions it derives from (ID_LIKE). */
  like: string[]
}

export function parseOsRelease(text: string): Distribution {
  const fields: Record<string, string> = {}
  for (const line of text.split('\n')) {
    const match = line.match(/^([A-Z_]+)=(.*)$/)
    if (match?.[1]) fields[match[1]] = (match[2] ?? '').trim().replace(/^(["'])(.*)\1$/, '$2')
  }
  const id = (fields.ID ?? 'linux').toLowerCase()
  return {
    id,
    versionId: fields.VERSION_ID || undefined,
    name: fields.PRETTY_NAME || [fields.NAME ?? id, fields.VERSION_ID].filter(Boolean).join(' '),
    like: (fields.ID_LIKE ?? '').toLowerCase().split(/\s+/).filter(Boolean),
  }
}

/** Whether the distribution has a package: known either way, or not known here. */
export type Availability = 'available' | 'unavailable' | 'unknown'

/** What a fix needs to know of the machine; `systemPackages()` reads it, tests make their own. */
export interface PackageSystem {
  distribution?: Distribution
  /** apt-get is there (a Debian or a derivative). */
  apt: boolean
  /** apt has package lists (else `apt-get update` comes first, and apt-cache cannot tell). */
  aptLists: boolean
  /**
   * Looks packages up in apt's lists, all in one go. Absent where a few seconds of apt-cache are
   * too slow (an error on a request path): then the table of known gaps alone decides.
   */
  aptLookup?: (names: readonly string[]) => Record<string, Availability>
  root: boolean
}

/**
 * Packages that releases lack, for when apt cannot be asked (checked on packages.debian.org and
 * packages.ubuntu.com): python3-pyarrow is in Debian only from sid on, and in Ubuntu from 26.04.
 */
const NOT_PACKAGED: Record<string, string[]> = {
  'python3-pyarrow': [
    'debian 11',
    'debian 12',
    'debian 13',
    'ubuntu 20.04',
    'ubuntu 22.04',
    'ubuntu 24.04',
    'ubuntu 24.10',
    'ubuntu 25.04',
    'ubuntu 25.10',
  ],
}

export function isDebianLike(distribution: Distribution | undefined): boolean {
  return (
    !!distribution && [distribution.id, ...distribution.like].some((id) => id === 'debian' || id === 'ubuntu')
  )
}

/** Whether this machine's distribution has the package, by apt first and the table second. */
export function availability(name: string, system: PackageSystem): Availability {
  if (!system.apt) return 'unknown'
  const fromApt = (system.aptLists && system.aptLookup?.([name])[name]) || 'unknown'
  if (fromApt !== 'unknown') return fromApt
  const release =
    system.distribution && `${system.distribution.id} ${system.distribution.versionId ?? ''}`.trim()
  if (release && NOT_PACKAGED[name]?.includes(release)) return 'unavailable'
  return isDebianLike(system.distribution) ? 'available' : 'unknown'
}

/** What `analyst doctor` and the errors say to install packages on this machine. */
export interface InstallFix {
  /** The command, for the packages that can be installed; absent when none can. */
  command?: string
  /** Packages this distribution does not have (or that cannot be told apart here: see `unknown`). */
  unavailable: string[]
  /** No apt here: the packages are named as Debian names them, which may differ on this system. */
  unknown: string[]
}

export function installFix(packages: string[], system: PackageSystem): InstallFix {
  if (system.aptLists) system.aptLookup?.(packages) // one apt-cache run for them all
  const found = packages.map((name) => ({ name, state: availability(name, system) }))
  const installable = found.filter((entry) => entry.state === 'available').map((entry) => entry.name)
  const unavailable = found.filter((entry) => entry.state === 'unavailable').map((entry) => entry.name)
  const unknown = found.filter((entry) => entry.state === 'unknown').map((entry) => entry.name)
  if (installable.length === 0) return { unavailable, unknown }
  const sudo = system.root ? '' : 'sudo '
  const install = `${sudo}apt-get install ${installable.join(' ')}`
  return {
    command: system.aptLists ? install : `${sudo}apt-get update && ${install}`,
    unavailable,
    unknown,
  }
}

/** The distribution's name, for messages: `Debian GNU/Linux 12 (bookworm)`, or `this system`. */
export function systemName(system: PackageSystem): string {
  return system.distribution?.name ?? 'this system'
}

/**
 * One sentence that installs the packages, or says why it cannot and what to do instead
 * (`otherwise`, when some package is missing from the distribution).
 */
export function installHint(packages: string[], system: PackageSystem, otherwise?: string): string {
  const fix = installFix(packages, system)
  const parts: string[] = []
  if (fix.command) parts.push(fix.command)
  if (fix.unavailable.length > 0) {
    parts.push(
      `${systemName(system)} has no package ${fix.unavailable.join(', ')}${otherwise ? `: ${otherwise}` : ''}`,
    )
  }
  if (fix.unknown.length > 0) {
    parts.push(
      `no apt here: install what Debian calls ${fix.unknown.join(', ')} with the package manager of ${systemName(system)}${otherwise ? `, or ${otherwise}` : ''}`,
    )
  }
  return parts.join('; ')
}

function hasAptLists(): boolean {
  try {
    return readdirSync('/var/lib/apt/lists').some((name) => name.includes('_Packages'))
  } catch {
    return false
  }
}

/** `apt-cache policy` for several packages: each one's candidate version, or none. */
function aptCandidates(names: readonly string[]): Record<string, Availability> {
  const found: Record<string, Availability> = {}
  const result = spawnSync('apt-cache', ['policy', ...names], { encoding: 'utf8', timeout: 60_000 })
  if (result.status !== 0 || result.error) {
    for (const name of names) found[name] = 'unknown'
    return found
  }
  // One section per package apt knows, from its "name:" line; unknown packages have none.
  let current: string | undefined
  for (const line of result.stdout.split('\n')) {
    const header = line.match(/^(\S+):$/)?.[1]
    if (header) current = header
    const candidate = line.match(/^\s+Candidate:\s*(\S+)/)?.[1]
    if (current && candidate) found[current] = candidate === '(none)' ? 'unavailable' : 'available'
  }
  for (const name of names) found[name] ??= 'unavailable'
  return found
}

let system: Omit<PackageSystem, 'aptCandidate'> | undefined
const candidates = new Map<string, Availability>()

/**
 * This machine, read once: /etc/os-release and apt. `askApt` looks packages up with apt-cache
 * (seconds on a busy machine: for `analyst doctor`); without it the table of known gaps decides.
 */
export function systemPackages(options: { askApt?: boolean } = {}): PackageSystem {
  if (!system) {
    let distribution: Distribution | undefined
    try {
      distribution = parseOsRelease(readFileSync('/etc/os-release', 'utf8'))
    } catch {
      distribution = undefined
    }
    system = { distribution, apt: existsSync('/usr/bin/apt-get'), aptLists: hasAptLists(), root: isRoot }
  }
  if (!options.askApt) return system
  return {
    ...system,
    aptLookup: (names) => {
      const unknown = names.filter((name) => !candidates.has(name))
      if (unknown.length > 0) {
        for (const [name, state] of Object.entries(aptCandidates(unknown))) candidates.set(name, state)
      }
      return Object.fromEntries(names.map((name) => [name, candidates.get(name) ?? 'unknown']))
    },
  }
}

/** A Python module the sandbox can use, the package that has it, and what Analyst does without it. */
export interface ModuleSource {
  module: string
  /** The Debian and Ubuntu package. */
  package: string
  /** When no package has it: what Analyst does instead, or what the user can do. */
  without?: string
}

export interface ModuleFix {
  /** A command that installs it here. */
  fix?: string
  /** Why there is no command, and what to do instead. */
  note?: string
}

export interface PipProbe {
  /** The interpreter the sandbox runs. */
  python: string
  /** pip can fetch the module from an index it reaches (so `pip install` would work). */
  reaches: (module: string) => boolean
  /** The interpreter's packages are managed by the distribution (PEP 668). */
  externallyManaged: boolean
}

/**
 * How to get a missing module on this machine: the distribution's package where it has one;
 * else what Analyst does without it; else pip, only where pip reaches an index that has it; else
 * another interpreter.
 */
export function moduleFix(source: ModuleSource, system: PackageSystem, pip?: PipProbe): ModuleFix {
  const fix = installFix([source.package], system)
  if (fix.command) return { fix: fix.command }
  const missing =
    fix.unavailable.length > 0
      ? `${systemName(system)} has no package ${source.package}`
      : `no apt on ${systemName(system)} (Debian's package is ${source.package})`
  if (source.without) return { note: `${missing}; ${source.without}` }
  if (pip?.reaches(source.module)) {
    const sudo = system.root ? '' : 'sudo '
    const flag = pip.externallyManaged ? ' --break-system-packages' : ''
    return { fix: `${sudo}${pip.python} -m pip install${flag} ${source.module}`, note: missing }
  }
  return {
    note: `${missing}: install ${source.module} for ${pip?.python ?? 'the sandbox Python'} another way, or set ANALYST_PYTHON to a Python 3 that has it`,
  }
}

/** Asks the interpreter's pip whether an index it reaches has the module (a few seconds at most). */
export function probePip(python: string): PipProbe {
  const managed = spawnSync(
    python,
    [
      '-c',
      "import sysconfig, os; print(os.path.exists(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))",
    ],
    { encoding: 'utf8', timeout: 10_000 },
  )
  return {
    python,
    externallyManaged: managed.stdout.trim() === 'True',
    reaches: (module) =>
      spawnSync(
        python,
        [
          '-m',
          'pip',
          'index',
          'versions',
          module,
          '--retries',
          '0',
          '--timeout',
          '5',
          '--disable-pip-version-check',
        ],
        { encoding: 'utf8', timeout: 20_000 },
      ).status === 0,
  }
}

/** Where each module comes from; the last three only widen what can be read. */
export const MODULE_SOURCES = {
  pandas: { module: 'pandas', package: 'python3-pandas' },
  numpy: { module: 'numpy', package: 'python3-numpy' },
  matplotlib: { module: 'matplotlib', package: 'python3-matplotlib' },
  scipy: { module: 'scipy', package: 'python3-scipy' },
  seaborn: { module: 'seaborn', package: 'python3-seaborn' },
  sklearn: { module: 'sklearn', package: 'python3-sklearn' },
  statsmodels: { module: 'statsmodels', package: 'python3-statsmodels' },
  openpyxl: {
    module: 'openpyxl',
    package: 'python3-openpyxl',
    without: '.xlsx workbooks cannot be read: save them as CSV',
  },
  xlrd: {
    module: 'xlrd',
    package: 'python3-xlrd',
    without: 'old .xls workbooks cannot be read: save them as .xlsx',
  },
  pyarrow: {
    module: 'pyarrow',
    package: 'python3-pyarrow',
    without: 'nothing to install: Analyst converts Parquet files for the sandbox',
  },
} satisfies Record<(typeof EXPECTED_MODULES)[number], ModuleSource>
