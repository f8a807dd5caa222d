import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
  availability,
  type Distribution,
  installHint,
  MODULE_SOURCES,
  moduleFix,
  type PackageSystem,
  type PipProbe,
  parseOsRelease,
  systemPackages,
} from './packages.js'

const DEBIAN_12 = parseOsRelease(`PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
`)
const UBUNTU_2404 = parseOsRelease(`PRETTY_NAME="Ubuntu 24.04.1 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
ID=ubuntu
ID_LIKE=debian
`)
const UBUNTU_2604 = parseOsRelease('NAME="Ubuntu"\nVERSION_ID="26.04"\nID=ubuntu\nID_LIKE=debian\n')
const FEDORA = parseOsRelease(
  'NAME="Fedora Linux"\nVERSION_ID=40\nID=fedora\nPRETTY_NAME="Fedora Linux 40"\n',
)

/** A machine: its distribution, and the packages apt has (undefined: apt without package lists). */
function machine(
  distribution: Distribution,
  options: { apt?: boolean; aptHas?: string[]; root?: boolean } = {},
): PackageSystem {
  const apt = options.apt ?? true
  return {
    distribution,
    apt,
    aptLists: apt && options.aptHas !== undefined,
    aptLookup: (names) =>
      Object.fromEntries(
        names.map((name) => [name, options.aptHas?.includes(name) ? 'available' : 'unavailable']),
      ),
    root: options.root ?? true,
  }
}

const DEBIAN_12_ARCHIVE = ['python3-pandas', 'python3-xlrd', 'python3-openpyxl', 'bubblewrap']

function pip(reaches: boolean, externallyManaged = true): PipProbe {
  return { python: '/usr/bin/python3', reaches: () => reaches, externallyManaged }
}

describe('parseOsRelease', () => {
  it('reads the id, the version, the name and what it derives from', () => {
    expect(DEBIAN_12).toEqual({
      id: 'debian',
      versionId: '12',
      name: 'Debian GNU/Linux 12 (bookworm)',
      like: [],
    })
    expect(UBUNTU_2404).toMatchObject({ id: 'ubuntu', versionId: '24.04', like: ['debian'] })
    expect(parseOsRelease('ID=arch\nNAME="Arch Linux"\n')).toEqual({
      id: 'arch',
      versionId: undefined,
      name: 'Arch Linux',
      like: [],
    })
  })
})

describe('availability', () => {
  it('asks apt when it has package lists, whatever the table says', () => {
    const debian = machine(DEBIAN_12, { aptHas: [...DEBIAN_12_ARCHIVE, 'python3-pyarrow'] })
    expect(availability('python3-pyarrow', debian)).toBe('available') // a backport, say
    expect(availability('python3-nothing', machine(DEBIAN_12, { aptHas: [] }))).toBe('unavailable')
  })

  it('falls back on the table of known gaps when apt has no lists yet (a fresh container)', () => {
    expect(availability('python3-pyarrow', machine(DEBIAN_12))).toBe('unavailable')
    expect(availability('python3-pyarrow', machine(UBUNTU_2404))).toBe('unavailable')
    expect(availability('python3-pyarrow', machine(UBUNTU_2604))).toBe('available')
    expect(availability('python3-xlrd', machine(DEBIAN_12))).toBe('available')
  })

  it('on a request path (apt-cache not asked) the table decides, and apt-get update is left out when apt has lists', () => {
    const quick: PackageSystem = { distribution: DEBIAN_12, apt: true, aptLists: true, root: true }
    expect(availability('python3-pyarrow', quick)).toBe('unavailable')
    expect(moduleFix(MODULE_SOURCES.xlrd, quick)).toEqual({ fix: 'apt-get install python3-xlrd' })
  })

  it('cannot tell without apt', () => {
    expect(availability('python3-xlrd', machine(FEDORA, { apt: false }))).toBe('unknown')
  })
})

describe('moduleFix', () => {
  it('Debian 12 has no python3-pyarrow: nothing to install, Parquet is converted', () => {
    for (const system of [machine(DEBIAN_12, { aptHas: DEBIAN_12_ARCHIVE }), machine(DEBIAN_12)]) {
      const fix = moduleFix(MODULE_SOURCES.pyarrow, system, pip(true))
      expect(fix.fix).toBeUndefined()
      expect(fix.note).toBe(
        'Debian GNU/Linux 12 (bookworm) has no package python3-pyarrow; nothing to install: Analyst converts Parquet files for the sandbox',
      )
    }
  })

  it('Debian 12 has python3-xlrd: the apt command, with sudo when not root, after apt-get update without lists', () => {
    expect(moduleFix(MODULE_SOURCES.xlrd, machine(DEBIAN_12, { aptHas: DEBIAN_12_ARCHIVE }))).toEqual({
      fix: 'apt-get install python3-xlrd',
    })
    expect(
      moduleFix(MODULE_SOURCES.xlrd, machine(DEBIAN_12, { aptHas: DEBIAN_12_ARCHIVE, root: false })),
    ).toEqual({ fix: 'sudo apt-get install python3-xlrd' })
    expect(moduleFix(MODULE_SOURCES.xlrd, machine(DEBIAN_12))).toEqual({
      fix: 'apt-get update && apt-get install python3-xlrd',
    })
  })

  it('Ubuntu 26.04 packages pyarrow', () => {
    expect(moduleFix(MODULE_SOURCES.pyarrow, machine(UBUNTU_2604)).fix).toBe(
      'apt-get update && apt-get install python3-pyarrow',
    )
  })

  it('a module no package has: pip only where pip reaches an index, else another interpreter', () => {
    const bare = machine(DEBIAN_12, { aptHas: [] })
    const reached = moduleFix(MODULE_SOURCES.statsmodels, bare, pip(true))
    expect(reached.fix).toBe('/usr/bin/python3 -m pip install --break-system-packages statsmodels')
    expect(reached.note).toMatch(/has no package python3-statsmodels/)
    expect(moduleFix(MODULE_SOURCES.statsmodels, bare, pip(true, false)).fix).toBe(
      '/usr/bin/python3 -m pip install statsmodels',
    )
    const offline = moduleFix(MODULE_SOURCES.statsmodels, bare, pip(false))
    expect(offline.fix).toBeUndefined()
    expect(offline.note).toMatch(/set ANALYST_PYTHON to a Python 3 that has it/)
  })

  it('without apt it names no apt command, and says what the module is called in Debian', () => {
    const fix = moduleFix(MODULE_SOURCES.xlrd, machine(FEDORA, { apt: false }), pip(false))
    expect(fix.fix).toBeUndefined()
    expect(fix.note).toBe(
      "no apt on Fedora Linux 40 (Debian's package is python3-xlrd); old .xls workbooks cannot be read: save them as .xlsx",
    )
  })
})

describe('installHint', () => {
  it('installs what the distribution has and says what it lacks', () => {
    const system = machine(DEBIAN_12, { aptHas: DEBIAN_12_ARCHIVE, root: false })
    expect(installHint(['python3-pandas', 'python3-pyarrow'], system, 'Parquet is converted')).toBe(
      'sudo apt-get install python3-pandas; Debian GNU/Linux 12 (bookworm) has no package python3-pyarrow: Parquet is converted',
    )
    expect(installHint(['bubblewrap'], machine(FEDORA, { apt: false }))).toBe(
      'no apt here: install what Debian calls bubblewrap with the package manager of Fedora Linux 40',
    )
  })
})

// The real machine: apt-cache's answers are read right. Debian 12 is what the suite runs on.
const release = (() => {
  try {
    return parseOsRelease(readFileSync('/etc/os-release', 'utf8'))
  } catch {
    return undefined
  }
})()
describe.skipIf(release?.id !== 'debian' || release.versionId !== '12')('on this Debian 12 machine', () => {
  it('apt has python3-xlrd and bubblewrap, and no python3-pyarrow', () => {
    expect(systemPackages().distribution).toMatchObject({ id: 'debian', versionId: '12' })
    const system = systemPackages({ askApt: true })
    expect(system.apt).toBe(true)
    // One apt-cache run for the three (seconds each on a busy machine).
    expect(system.aptLookup?.(['python3-xlrd', 'bubblewrap', 'python3-pyarrow'])).toEqual({
      'python3-xlrd': 'available',
      bubblewrap: 'available',
      'python3-pyarrow': 'unavailable',
    })
    expect(availability('python3-xlrd', system)).toBe('available')
    expect(availability('bubblewrap', system)).toBe('available')
    expect(availability('python3-pyarrow', system)).toBe('unavailable')
  })
})
