import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { PackageSystem } from '../../packages.js'
import { languageChecks } from './doctor-languages.js'

const debian: PackageSystem = {
  distribution: { id: 'debian', versionId: '12', name: 'Debian GNU/Linux 12 (bookworm)', like: [] },
  apt: true,
  aptLists: true,
  aptLookup: (names) => Object.fromEntries(names.map((name) => [name, 'available'])),
  root: true,
}
const empty = mkdtempSync(join(tmpdir(), 'analyst-doctor-path-'))
afterAll(() => rmSync(empty, { recursive: true, force: true }))

describe("doctor's language checks", () => {
  it('says R and node are missing from the sandbox PATH, with the apt command that installs them', () => {
    const checks = languageChecks({ path: [empty], system: debian })
    const r = checks.find((check) => check.name === 'R')
    expect(r).toMatchObject({ ok: false, essential: false, detail: expect.stringContaining('no Rscript') })
    expect(r?.fix).toMatch(/^apt-get install r-base-core r-cran-jsonlite r-cran-repr r-cran-irkernel/)
    const node = checks.find((check) => check.name.startsWith('node'))
    expect(node).toMatchObject({ ok: false, fix: expect.stringMatching(/^apt-get install nodejs/) })
  })

  it("finds this machine's R with its kernel's packages, and node", () => {
    const checks = languageChecks({ path: ['/usr/bin'], system: debian })
    expect(checks.find((check) => check.name === 'R')).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/^\/usr\/bin\/Rscript \(R \d+\.\d+\.\d+\)$/),
    })
    expect(
      checks.filter((check) => check.name.startsWith('R package')).map((check) => [check.name, check.ok]),
    ).toEqual([
      ['R package jsonlite', true],
      ['R package repr', true],
      ['R package IRkernel', true],
      ['R package ggplot2', true],
      ['R package data.table', true],
      ['R package readr', true],
    ])
    expect(checks.find((check) => check.name.startsWith('node'))?.ok).toBe(true)
  })
})
