/**
 * An eval run in plain text, for the terminal: the three scores overall, by level and by concept,
 * the published figures beside them (marked as such), which questions failed and why, and the
 * grounding check.
 * @module
 */
import { clock, count, idList, percent, textTable } from './format.js'
import { PUBLISHED } from './published.js'
import type { EvalReport } from './report.js'
import type { Scores } from './score.js'

function scoreRows(groups: Record<string, Scores>): string[][] {
  return Object.entries(groups).map(([name, s]) => [
    name,
    percent(s.abq),
    percent(s.psaq),
    percent(s.uasq),
    String(s.questions),
  ])
}

export function formatReport(report: EvalReport): string {
  const lines: string[] = []
  const state =
    report.status === 'done'
      ? `${report.questions} questions`
      : `${report.questions} of ${report.planned} questions (interrupted: resume with --resume ${report.runId.slice(0, 8)})`
  lines.push(
    `Eval run ${report.runId} · ${report.model} · ${state} · ${clock(report.durationMs)} · ${count(report.tokens)} tokens`,
  )
  lines.push('')
  lines.push(
    textTable([
      ['', 'ABQ', 'PSAQ', 'UASQ', 'questions'],
      ['overall', percent(report.abq), percent(report.psaq), percent(report.uasq), String(report.questions)],
      ...scoreRows(report.byLevel),
    ]),
  )
  if (Object.keys(report.byConcept).length > 0) {
    lines.push('')
    lines.push(
      textTable([['by concept', 'ABQ', 'PSAQ', 'UASQ', 'questions'], ...scoreRows(report.byConcept)]),
    )
  }
  lines.push('')
  lines.push('Published on InfiAgent-DABench (not measured here), ABQ:')
  lines.push(`  ${PUBLISHED.map((p) => `${p.name} ${percent(p.abq)}`).join(' · ')}`)
  const failed = report.results.filter((r) => !r.correct)
  const crashed = report.results.filter((r) => r.error)
  lines.push('')
  lines.push(
    failed.length > 0
      ? `Wrong (${failed.length}): ${idList(failed.map((r) => r.id))}`
      : 'Every question answered right.',
  )
  for (const result of crashed.slice(0, 10)) lines.push(`  ${result.id} crashed: ${result.error}`)
  if (crashed.length > 10) lines.push(`  … and ${crashed.length - 10} more crashed`)
  const { grounding } = report
  lines.push(
    `Answers stating numbers that no output of their code shows: ${percent(grounding.share)} (${grounding.withUnsupportedNumbers} of ${grounding.answers})`,
  )
  if (report.rateLimits.limited > 0)
    lines.push(
      `Rate limited ${report.rateLimits.limited} time(s), paused ${clock(report.rateLimits.pausedMs)} in all.`,
    )
  return `${lines.join('\n')}\n`
}
