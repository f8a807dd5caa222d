/**
 * What MCP tools answer: a cell's outcome, an analysis, an error, as MCP content (text, and each
 * chart as an image). The text is the one Analyst's own model reads of a step (`observe`), so a
 * client's model sees what Analyst's would.
 * @module
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { type AskResult, observe } from '../agent/index.js'
import { AnalystError } from '../errors.js'
import type { Result } from '../sandbox/index.js'
import type { CellResult } from '../session/index.js'

type Content = CallToolResult['content'][number]

/** The URI of a session's artifact, each part of its name escaped. */
export function artifactUri(sessionId: string, name: string): string {
  return `analyst://sessions/${encodeURIComponent(sessionId)}/artifacts/${name.split('/').map(encodeURIComponent).join('/')}`
}

/** A result's image (PNG or JPEG) as image content; SVG and the rest are described in the text. */
function image(result: Pick<Result, 'png' | 'jpeg'>): Content | undefined {
  if (result.png) return { type: 'image', data: result.png, mimeType: 'image/png' }
  if (result.jpeg) return { type: 'image', data: result.jpeg, mimeType: 'image/jpeg' }
  return undefined
}

function guardText(violations: CellResult['violations']): string {
  const lines = violations.map((v) => `  line ${v.line}:${v.column}  ${v.rule}  ${v.message}`)
  return ['Nothing ran: the guard stopped this code.', ...lines, 'Change the code and run it again.'].join(
    '\n',
  )
}

/** A cell's outcome: an error result when the code raised or the guard stopped it. */
export function cellContent(
  cell: CellResult,
  options: { sessionId: string; imageNames: string[] },
): CallToolResult {
  const { execution, violations } = cell
  if (!execution) return { content: [{ type: 'text', text: guardText(violations) }], isError: true }
  const saved = [...options.imageNames, ...execution.artifacts.map((a) => a.name)]
  let text = observe({ execution, imageNames: options.imageNames })
  if (saved.length > 0)
    text += `\n[resources] ${saved.map((name) => artifactUri(options.sessionId, name)).join(', ')}`
  const images = execution.results.map(image).filter((c): c is Content => c !== undefined)
  return { content: [{ type: 'text', text }, ...images], isError: execution.error !== undefined }
}

/** One line for a step of an analysis: what it ran and how that went. */
function stepLine(step: AskResult['steps'][number]): string {
  const outcome = step.violations?.length
    ? `stopped by the guard (${step.violations.map((v) => v.message).join('; ')})`
    : step.execution?.error
      ? `raised ${step.execution.error.name}: ${step.execution.error.value}`
      : 'ran'
  return `Step ${step.step} ${outcome}:\n\`\`\`python\n${step.code}\n\`\`\``
}

/** An analysis: the answer first, then the steps that back it, the numbers it could not back, its files. */
export function answerContent(result: AskResult, sessionId: string): CallToolResult {
  const parts = [result.answer]
  if (result.incomplete) parts.push('(The analysis stopped at its step limit before a final answer.)')
  if (result.unsupportedNumbers.length > 0)
    parts.push(
      `Numbers in the answer that no output of the session shows (check them): ${result.unsupportedNumbers.join(', ')}`,
    )
  if (result.steps.length > 0) parts.push(`The code it ran:\n\n${result.steps.map(stepLine).join('\n\n')}`)
  const names = [...result.steps.flatMap((s) => s.images ?? []), ...result.artifacts.map((a) => a.name)]
  if (names.length > 0) parts.push(`Files: ${names.map((name) => artifactUri(sessionId, name)).join(', ')}`)
  const images = result.steps
    .flatMap((step) => (step.execution?.results ?? []) as Array<Pick<Result, 'png' | 'jpeg'>>)
    .map(image)
    .filter((c): c is Content => c !== undefined)
  return { content: [{ type: 'text', text: parts.join('\n\n') }, ...images] }
}

/** An error as a tool result the client's model can read and act on, never a protocol failure. */
export function errorContent(error: unknown): CallToolResult {
  let text: string
  if (AnalystError.isInstance(error)) text = error.hint ? `${error.message}\n${error.hint}` : error.message
  else {
    // Not the caller's doing: keep the details for the operator (stderr), say little to the model.
    console.error('analyst mcp: internal error:', error)
    text = `Internal error: ${error instanceof Error ? error.message : String(error)}`
  }
  return { content: [{ type: 'text', text }], isError: true }
}
