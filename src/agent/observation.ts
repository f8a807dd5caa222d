/**
 * What the model sees of a step: a bounded summary of the execution. stdout and stderr keep their
 * head and tail with a marker between; tables are summarized by shape and head; images by size;
 * errors keep their traceback.
 * @module
 */
import { type Door, executionFix, phraseFix } from '../fixes.js'
import { type Artifact, type Execution, parseChart, type Result, summarizeChart } from '../sandbox/index.js'
import type { RefusedFile } from './events.js'

export interface ObservationLimits {
  /** Characters of stdout (and of stderr) kept. @default 4000 */
  streamChars: number
  /** Characters of one result's text kept. @default 2000 */
  resultChars: number
  /** Characters of a traceback kept. @default 3000 */
  tracebackChars: number
}

export const DEFAULT_OBSERVATION_LIMITS: ObservationLimits = {
  streamChars: 4000,
  resultChars: 2000,
  tracebackChars: 3000,
}

/** Keeps the head and the tail, with a marker saying how much was left out. */
export function truncateMiddle(text: string, max: number): string {
  if (text.length <= max) return text
  const head = Math.ceil(max * 0.6)
  const tail = max - head
  const omitted = text.length - head - tail
  return `${text.slice(0, head)}\n… [${omitted} characters omitted] …\n${text.slice(text.length - tail)}`
}

/** Width and height of a base64 PNG, from its header. */
export function pngSize(base64: string): { width: number; height: number } | undefined {
  try {
    const header = Buffer.from(base64.slice(0, 44), 'base64')
    if (header.toString('ascii', 1, 4) !== 'PNG') return undefined
    return { width: header.readUInt32BE(16), height: header.readUInt32BE(20) }
  } catch {
    return undefined
  }
}

function describeResult(result: Result, limits: ObservationLimits, imageName?: string): string {
  if (result.png || result.jpeg || result.svg) {
    const size = result.png ? pngSize(result.png) : undefined
    const format = result.png ? 'PNG' : result.jpeg ? 'JPEG' : 'SVG'
    const dimensions = size ? ` ${size.width}×${size.height}` : ''
    const shown = `[image] a chart (${format}${dimensions})${imageName ? `, shown to the user as ${imageName}` : ''}`
    // The data behind it, for a model that cannot see the image.
    const chart = parseChart(result.chart)
    return chart ? `${shown}. Its data: ${truncateMiddle(summarizeChart(chart), limits.resultChars)}` : shown
  }
  const label = result.isMainResult ? '[result]' : '[display]'
  if (result.data && result.text) {
    const columns = Object.keys(result.data)
    const shape = result.text.match(/\[(\d+) rows x (\d+) columns\]/)
    const rows = shape ? shape[1] : String(result.data[columns[0] ?? '']?.length ?? 0)
    return `${label} a table with ${rows} rows and columns ${columns.join(', ')}:\n${truncateMiddle(result.text, limits.resultChars)}`
  }
  if (result.text !== undefined) return `${label} ${truncateMiddle(result.text, limits.resultChars)}`
  return `${label} output in ${result.formats().join(', ') || 'no'} format`
}

export interface ObservationInput {
  execution: Execution
  /** File names the images were saved under for the user, in the order of the image results. */
  imageNames?: string[]
  /** Appended as a note (e.g. the same error twice). */
  notes?: string[]
  limits?: ObservationLimits
  /** Who reads it: what fixes an error is said in its words. @default 'model' */
  door?: Door
}

export function describeArtifacts(artifacts: Artifact[]): string {
  return artifacts.map((a) => `${a.name} (${a.size} bytes, ${a.mimeType})`).join(', ')
}

export function observe({
  execution,
  imageNames = [],
  notes = [],
  limits = DEFAULT_OBSERVATION_LIMITS,
  door = 'model',
}: ObservationInput): string {
  const parts: string[] = []
  const stdout = execution.logs.stdout.join('')
  const stderr = execution.logs.stderr.join('')
  if (stdout) parts.push(`[stdout]\n${truncateMiddle(stdout.replace(/\n$/, ''), limits.streamChars)}`)
  if (stderr) parts.push(`[stderr]\n${truncateMiddle(stderr.replace(/\n$/, ''), limits.streamChars)}`)
  let image = 0
  for (const result of execution.results) {
    const isImage = Boolean(result.png || result.jpeg || result.svg)
    parts.push(describeResult(result, limits, isImage ? imageNames[image++] : undefined))
  }
  if (execution.artifacts.length > 0)
    parts.push(`[files] saved in the workspace: ${describeArtifacts(execution.artifacts)}`)
  if (execution.error) {
    const { name, value, traceback } = execution.error
    parts.push(`[error] ${name}: ${value}\n${truncateMiddle(traceback, limits.tracebackChars)}`)
    const fix = phraseFix(executionFix(execution.error), door)
    if (fix) parts.push(`[fix] ${fix}`)
  }
  if (parts.length === 0)
    parts.push('[no output] The code ran without printing anything. print() what you need to see.')
  for (const note of notes) parts.push(`[note] ${note}`)
  return parts.join('\n')
}

/**
 * What the model is told of a step's files that were not kept for the user (the server's disk
 * full), so that its answer does not offer a file that is not there; undefined when all were kept.
 */
export function refusedNote(refused: RefusedFile[] | undefined): string | undefined {
  if (!refused?.length) return undefined
  const byReason = new Map<string, string[]>()
  for (const { name, reason } of refused) byReason.set(reason, [...(byReason.get(reason) ?? []), name])
  const said = [...byReason].map(([reason, names]) => `${names.join(', ')}: ${reason}`).join('; ')
  const them = refused.length === 1 ? 'it' : 'them'
  return `[not kept] ${said}. The user cannot see or download ${them}: do not offer ${them} in your answer; say that ${refused.length === 1 ? 'it was' : 'they were'} not kept, and why.`
}
