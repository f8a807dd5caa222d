/**
 * What the analyst is asked for a benchmark question: the benchmark's own instructions (the
 * question, its constraints, its answer format) and the one thing the scoring needs, the closing
 * `@name[value]` lines. Asked as the session's question, through the same loop as `analyst ask`.
 * @module
 */
import type { EvalQuestion } from './dataset.js'

export function benchmarkPrompt(question: EvalQuestion): string {
  const parts = [question.question.trim()]
  if (question.constraints.trim()) parts.push(`Constraints:\n${question.constraints.trim()}`)
  parts.push(`Answer format:\n${question.format.trim()}`)
  parts.push(
    [
      `The data is data/${question.fileName}.`,
      'Follow the constraints exactly. End your final answer with one line per answer, exactly as the format writes it: @answer_name[answer], every name of the format in its order, and only the value inside the brackets (no units, no quotes, no extra words).',
    ].join(' '),
  )
  return parts.join('\n\n')
}
