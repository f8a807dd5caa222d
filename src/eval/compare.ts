/**
 * Two eval runs side by side (`analyst eval compare A B`): their scores over the questions both
 * answered, the difference (B − A), and which questions flipped.
 * @module
 */
import { idList, percent, textTable } from './format.js'
import type { QuestionResult } from './harness.js'
import { computeScores, type Scores } from './score.js'

export interface RunResults {
  runId: string
  model: string
  results: QuestionResult[]
}

export interface Comparison {
  a: { runId: string; model: string } & Scores
  b: { runId: string; model: string } & Scores
  /** Questions both runs answered: the scores above are over these. */
  common: number
  /** B − A, in fractions. */
  difference: { abq: number; psaq: number; uasq: number }
  /** Wrong in A, right in B. */
  nowRight: number[]
  /** Right in A, wrong in B. */
  nowWrong: number[]
  onlyInA: number[]
  onlyInB: number[]
}

export function compareRuns(a: RunResults, b: RunResults): Comparison {
  const inB = new Map(b.results.map((r) => [r.id, r]))
  const inA = new Map(a.results.map((r) => [r.id, r]))
  const pairs = a.results.flatMap((ra) => {
    const rb = inB.get(ra.id)
    return rb ? [[ra, rb] as const] : []
  })
  const scoresA = computeScores(pairs.map(([ra]) => ra))
  const scoresB = computeScores(pairs.map(([, rb]) => rb))
  return {
    a: { runId: a.runId, model: a.model, ...scoresA },
    b: { runId: b.runId, model: b.model, ...scoresB },
    common: pairs.length,
    difference: {
      abq: scoresB.abq - scoresA.abq,
      psaq: scoresB.psaq - scoresA.psaq,
      uasq: scoresB.uasq - scoresA.uasq,
    },
    nowRight: pairs.filter(([ra, rb]) => !ra.correct && rb.correct).map(([ra]) => ra.id),
    nowWrong: pairs.filter(([ra, rb]) => ra.correct && !rb.correct).map(([ra]) => ra.id),
    onlyInA: a.results.filter((r) => !inB.has(r.id)).map((r) => r.id),
    onlyInB: b.results.filter((r) => !inA.has(r.id)).map((r) => r.id),
  }
}

function points(fraction: number): string {
  const value = (fraction * 100).toFixed(2)
  return `${fraction > 0 ? '+' : ''}${value} pts`
}

export function formatComparison(c: Comparison): string {
  const row = (label: string, run: Comparison['a']) => [
    `${label} ${run.runId.slice(0, 8)} ${run.model}`,
    percent(run.abq),
    percent(run.psaq),
    percent(run.uasq),
  ]
  const lines = [
    textTable([
      ['', 'ABQ', 'PSAQ', 'UASQ'],
      row('A', c.a),
      row('B', c.b),
      ['B − A', points(c.difference.abq), points(c.difference.psaq), points(c.difference.uasq)],
    ]),
    `over the ${c.common} question(s) both runs answered`,
    '',
    `Now right in B (${c.nowRight.length}): ${idList(c.nowRight) || '-'}`,
    `Now wrong in B (${c.nowWrong.length}): ${idList(c.nowWrong) || '-'}`,
  ]
  if (c.onlyInA.length > 0) lines.push(`Only in A (${c.onlyInA.length}): ${idList(c.onlyInA)}`)
  if (c.onlyInB.length > 0) lines.push(`Only in B (${c.onlyInB.length}): ${idList(c.onlyInB)}`)
  return `${lines.join('\n')}\n`
}
