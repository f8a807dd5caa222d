/**
 * Analyst's sandbox as a LangChain.js tool (`@langchain/core`, an optional peer dependency):
 * `run_python`, the guard first. The model reads the text; the whole outcome, charts included, is
 * the tool message's artifact.
 *
 * ```ts
 * import { Sandbox } from 'analyst'
 * import { runPythonTool } from 'analyst/langchain'
 *
 * const sandbox = await Sandbox.create({ data: ['sales.csv'] })
 * const agent = createAgent({ model, tools: [runPythonTool(sandbox)] })
 * ```
 * @module
 */
import { tool } from '@langchain/core/tools'
import { z } from 'zod'
import type { Sandbox } from '../sandbox/index.js'
import { type CellOutput, RUN_PYTHON_DESCRIPTION, type RunCellOptions, runCell } from './cell.js'

export { type CellImage, type CellOutput, RUN_PYTHON_DESCRIPTION, runCell } from './cell.js'
export { type DataInput, describeData } from './data.js'

const schema = z.object({
  code: z.string().min(1).describe('The Python code to run, as one cell'),
  timeout_ms: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('Time limit for this cell in milliseconds (default 60000); the kernel keeps its state'),
})

/**
 * A LangChain tool bound to one sandbox; its state carries from one call to the next. Called with
 * a tool call, it answers a ToolMessage whose content is the text and whose artifact is the
 * `CellOutput` (charts as base64 images, saved files, isError).
 */
export function runPythonTool(sandbox: Sandbox, options: Omit<RunCellOptions, 'signal'> = {}) {
  return tool(
    async ({ code, timeout_ms }, config): Promise<[string, CellOutput]> => {
      const output = await runCell(sandbox, code, {
        ...options,
        timeoutMs: timeout_ms ?? options.timeoutMs,
        signal: config?.signal,
      })
      return [output.text, output]
    },
    {
      name: 'run_python',
      description: RUN_PYTHON_DESCRIPTION,
      schema,
      responseFormat: 'content_and_artifact',
    },
  )
}
