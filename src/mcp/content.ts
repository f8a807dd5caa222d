/**
 * What MCP tools answer: a cell's outcome, an analysis, an error, as MCP content (text, and each
 * chart as an image). A cell's text is the one Analyst's own model reads of a step, so a client's
 * model sees what Analyst's would.
 * @module
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { type AskResult, refusedNote } from '../agent/index.js'
import { AnalystError, known } from '../errors.js'
import { advice } from '../fixes.js'
import { type CellImage, cellOutput, imageOf } from '../integrations/cell.js'
import type { Result } from '../sandbox/index.js'
import type { CellResult } from '../session/index.js'

type Content = CallToolResult['content'][number]

/** The URI of a session's artifact, each part of its name escaped. */
export function artifactUri(sessionId: string, name: string): string {
  return `analyst://sessions/${encodeURIComponent(sessionId)}/artifacts/${name.split('/').map(encodeURIComponent).join('/')}`
}

/** A chart as MCP image content. */
function imageContent(image: CellImage): Content {
  return { type: 'image', data: image.data, mimeType: image.mediaType }
}

/** A cell's outcome: an error result when the code raised or the guard stopped it. */
export function cellContent(
  cell: CellResult,
  options: { sessionId: string; imageNames: string[] },
): CallToolResult {
  const output = cellOutput(cell.execution, cell.violations, options.imageNames, 'mcp')
  // A file the server's disk could not keep is no resource: the client's model is told why instead.
  const refused = new Set((cell.refused ?? []).map((file) => file.name))
  const saved = [...options.imageNames, ...output.files.map((a) => a.name)].filter(
    (name) => !refused.has(name),
  )
  let text = output.text
  if (saved.length > 0)
    text += `\n[resources] ${saved.map((name) => artifactUri(options.sessionId, name)).join(', ')}`
  const notKept = refusedNote(cell.refused)
  if (notKept) text += `\n${notKept}`
  return { content: [{ type: 'text', text }, ...output.images.map(imageContent)], isError: output.isError }
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
    .map(imageOf)
    .filter((image) => image !== undefined)
    .map(imageContent)
  return { content: [{ type: 'text', text: parts.join('\n\n') }, ...images] }
}

/** An error as a tool result the client's model can read and act on, never a protocol failure. */
export function errorContent(thrown: unknown): CallToolResult {
  const error = known(thrown)
  let text: string
  if (AnalystError.isInstance(error)) {
    const what = advice(error, 'mcp')
    text = what ? `${error.message}\n${what}` : error.message
  } else {
    // Not the caller's doing: keep the details for the operator (stderr), say little to the model.
    console.error('analyst mcp: internal error:', error)
    text = `Internal error: ${error instanceof Error ? error.message : String(error)}`
  }
  return { content: [{ type: 'text', text }], isError: true }
}
