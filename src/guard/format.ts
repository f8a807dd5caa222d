/**
 * Violations as text: one line each, `file:line:column  rule  message`, the way compilers and
 * linters print them, so editors can jump to them.
 * @module
 */
import type { Violation } from './policy.js'

export interface FileReport {
  file: string
  violations: Violation[]
}

export function formatViolations(report: FileReport): string {
  return report.violations
    .map(
      (violation) =>
        `${report.file}:${violation.line}:${violation.column}  ${violation.rule}  ${violation.message}\n`,
    )
    .join('')
}
