/**
 * A cell as another agent's tool runs it: the guard first (as in `ask`), then the sandbox; and what
 * the calling model reads back: the text Analyst's own model reads of a step (`observe`), and each
 * chart as an image. Shared by the AI SDK and LangChain tools and the MCP server.
 * @module
 */
import { observe, type Violation } from '../agent/index.js'
import type { Door } from '../fixes.js'
import { checkCode } from '../guard/index.js'
import type { Artifact, Execution, Result, Sandbox } from '../sandbox/index.js'

export interface CellImage {
  /** Base64. */
  data: string
  mediaType: 'image/png' | 'image/jpeg'
}

/** What a tool that ran a cell answers. Plain JSON, so frameworks can keep it in their history. */
export interface CellOutput {
  /** stdout, stderr, results, the files saved, the error with its traceback; or why nothing ran. */
  text: string
  /** Each chart (PNG or JPEG result), in order. */
  images: CellImage[]
  /** Files the cell created or changed in the workspace. */
  files: Artifact[]
  /** The code raised, or the guard stopped it. */
  isError: boolean
}

export interface RunCellOptions {
  /** Check the code with the static guard first; code it stops does not run. @default true */
  guard?: boolean
  /** The sandbox has network: the guard allows network code. @default false */
  allowNetwork?: boolean
  /** @default 60 000 */
  timeoutMs?: number
  signal?: AbortSignal
}

/** A result's image, if it has one (SVG and the rest are described in the text). */
export function imageOf(result: Pick<Result, 'png' | 'jpeg'>): CellImage | undefined {
  if (result.png) return { data: result.png, mediaType: 'image/png' }
  if (result.jpeg) return { data: result.jpeg, mediaType: 'image/jpeg' }
  return undefined
}

/** The outcome of a cell (no execution: the guard stopped it) as a tool's answer. */
export function cellOutput(
  execution: Execution | undefined,
  violations: Violation[],
  imageNames: string[] = [],
  /** Who reads it (the calling model, or an MCP client): how a fix is worded. */
  door: Door = 'model',
): CellOutput {
  if (!execution) {
    const lines = violations.map((v) => `  line ${v.line}:${v.column}  ${v.rule}  ${v.message}`)
    const text = ['Nothing ran: the guard stopped this code.', ...lines, 'Change the code and run it again.']
    return { text: text.join('\n'), images: [], files: [], isError: true }
  }
  return {
    text: observe({ execution, imageNames, door }),
    images: execution.results.map(imageOf).filter((image) => image !== undefined),
    files: execution.artifacts,
    isError: execution.error !== undefined,
  }
}

/** Runs a cell in the sandbox, the guard first. Failures of the code come back in the output. */
export async function runCell(
  sandbox: Sandbox,
  code: string,
  options: RunCellOptions = {},
): Promise<CellOutput> {
  const violations =
    options.guard === false ? [] : await checkCode(code, { allowNetwork: options.allowNetwork === true })
  if (violations.length > 0) return cellOutput(undefined, violations)
  const execution = await sandbox.runCode(code, { timeoutMs: options.timeoutMs, signal: options.signal })
  return cellOutput(execution, [])
}

/** The description of the run_python tool, for every framework. */
export const RUN_PYTHON_DESCRIPTION =
  'Run Python code in a stateful sandbox: variables, imports and functions persist from one call to the next. ' +
  'Data files are read-only at data/<name>; pandas, numpy and matplotlib are available; there is no network. ' +
  'Returns stdout, stderr, the value of the last expression, the error with its traceback, the files saved in the working directory, and each chart as an image. ' +
  'The code is checked first: code that reaches for the network, other processes or files outside the sandbox is refused with the reason, and nothing runs.'
