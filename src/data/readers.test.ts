import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { readerChecks } from './readers.js'

function has(module: string): boolean {
  const code = `import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('${module}') else 1)`
  try {
    execFileSync('/usr/bin/python3', ['-c', code])
    return true
  } catch {
    return false
  }
}

describe('readerChecks', () => {
  it("says which readers the sandbox's Python has, and what Analyst does for the missing ones", async () => {
    const checks = Object.fromEntries((await readerChecks()).map((c) => [c.format, c]))
    expect(checks['CSV, TSV (plain, gzip, zip)']?.ok).toBe(true)
    expect(checks['Excel .xlsx']?.ok).toBe(has('openpyxl'))
    expect(checks['Excel .xls']?.ok).toBe(has('xlrd'))
    expect(checks.Parquet?.ok).toBe(true)
    const native = has('pyarrow') || has('fastparquet')
    expect(checks.Parquet?.detail).toMatch(
      native ? /pd\.read_parquet/ : /converts Parquet files to pandas pickles/,
    )
  })
})
