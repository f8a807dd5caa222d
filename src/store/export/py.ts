/**
 * A session as a Python script that re-runs the analysis: the cells that ran without error, in
 * order, with each question and answer as comments. It reads data/<name> like the sandbox did, and
 * queries the session's sources with a sql() of its own that takes their URLs from the environment.
 * @module
 */
import type { SessionHistory } from '../types.js'
import { sessionSources, sourcesNote, sqlFunction } from './sql.js'

const comment = (text: string) =>
  text
    .split('\n')
    .map((line) => (line ? `# ${line}` : '#'))
    .join('\n')

export function toScript(history: SessionHistory): string {
  const { session } = history
  const sources = sessionSources(history)
  const parts = [
    '#!/usr/bin/env python3',
    comment(
      `${session.title}\nAnalyst session ${session.id}. Re-runs the analysis: run it from a folder with the data in data/:`,
    ),
    comment(history.datasets.map((d) => `  data/${d.name}`).join('\n') || '  (no data files)'),
    ...(sources.length ? [comment(sourcesNote(sources).join('\n'))] : []),
    '',
    'import matplotlib',
    "matplotlib.use('Agg')  # charts are saved by the code, not shown",
    'try:',
    '    display  # noqa: B018  (defined in notebooks and in the sandbox)',
    'except NameError:',
    '    display = print',
    '',
    ...(sources.length ? [sqlFunction(sources)] : []),
  ]
  for (const run of history.runs) {
    parts.push(comment(`Question: ${run.question}`), '')
    for (const step of run.steps) {
      // Not what re-runs the analysis: a failed cell, one the guard refused, one stopped mid-way.
      if (step.error || step.violations?.length || step.stopped) continue
      parts.push(`# --- step ${step.step} ---`, step.code.replace(/\s+$/, ''), '')
    }
    if (run.answer) parts.push(comment(`Answer: ${run.answer}`), '')
  }
  return `${parts.join('\n')}\n`
}
