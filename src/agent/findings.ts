/**
 * The answer when the step cap ends an analysis without a final answer: what the last successful
 * steps showed, or the last error when none succeeded.
 * @module
 */
import type { StepRecord } from './events.js'
import { describeArtifacts, truncateMiddle } from './observation.js'

export function findingsSoFar(steps: StepRecord[], maxSteps: number): string {
  const lines = [`The analysis stopped after ${maxSteps} steps without a final answer (incomplete).`]
  const succeeded = steps.filter((s) => s.execution && !s.execution.error).slice(-2)
  if (succeeded.length === 0) {
    lines.push('No step ran without an error.')
    const last = steps.at(-1)?.execution?.error
    if (last) lines.push(`The last error was ${last.name}: ${last.value}`)
  } else {
    lines.push('What the code found so far:')
    for (const s of succeeded) {
      const out = [
        s.execution?.logs.stdout.join('') ?? '',
        ...(s.execution?.results.map((r) => String(r.text ?? '')) ?? []),
      ]
        .join('\n')
        .trim()
      lines.push(`Step ${s.step}:\n${truncateMiddle(out || '(no output)', 1500)}`)
      if (s.artifacts.length > 0) lines.push(`Files: ${describeArtifacts(s.artifacts)}`)
    }
  }
  return lines.join('\n')
}
