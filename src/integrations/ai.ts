/**
 * Analyst's sandbox as tools for an agent built on the AI SDK (`generateText`, `streamText`,
 * agents): `run_python` (the guard first, charts shown to the model as images) and `list_data`.
 *
 * ```ts
 * import { Sandbox } from 'analyst'
 * import { analystTools } from 'analyst/ai'
 *
 * const data = ['sales.csv']
 * const sandbox = await Sandbox.create({ data })
 * const { text } = await generateText({ model, tools: analystTools(sandbox, { data }), prompt, stopWhen: stepCountIs(8) })
 * ```
 * @module
 */
import { jsonSchema, type Tool, tool } from 'ai'
import type { Sandbox } from '../sandbox/index.js'
import { type CellOutput, RUN_PYTHON_DESCRIPTION, type RunCellOptions, runCell } from './cell.js'
import { type DataInput, describeData } from './data.js'

export { type CellImage, type CellOutput, RUN_PYTHON_DESCRIPTION, runCell } from './cell.js'
export { type DataInput, describeData } from './data.js'

export interface AnalystToolsOptions extends Omit<RunCellOptions, 'signal'> {
  /** The data files the sandbox was given: `list_data` describes them (profiled once, when first asked). */
  data?: DataInput[]
  /**
   * Show charts to the model as images. Leave on for model providers that take images in tool results
   * (Anthropic, OpenAI's Responses API, Google); turn off for chat-completions ones
   * (`@ai-sdk/openai-compatible`, `openai.chat`), which would send the base64 to the model as text.
   * @default true
   */
  images?: boolean
}

// A type, not an interface: it must fit the AI SDK's ToolSet (an index signature).
export type AnalystTools = {
  run_python: Tool<{ code: string; timeout_ms?: number }, CellOutput>
  list_data: Tool<Record<string, never>, string>
}

/** AI SDK tools bound to one sandbox; its state carries from one `run_python` call to the next. */
export function analystTools(sandbox: Sandbox, options: AnalystToolsOptions = {}): AnalystTools {
  let described: Promise<string> | undefined
  return {
    run_python: tool({
      description: RUN_PYTHON_DESCRIPTION,
      inputSchema: jsonSchema<{ code: string; timeout_ms?: number }>({
        type: 'object',
        properties: {
          code: { type: 'string', description: 'The Python code to run, as one cell' },
          timeout_ms: {
            type: 'integer',
            minimum: 1,
            description:
              'Time limit for this cell in milliseconds (default 60000); the kernel keeps its state',
          },
        },
        required: ['code'],
        additionalProperties: false,
      }),
      execute: ({ code, timeout_ms }, { abortSignal }) =>
        runCell(sandbox, code, {
          ...options,
          timeoutMs: timeout_ms ?? options.timeoutMs,
          signal: abortSignal,
        }),
      // Plain text unless there are charts to show: chat-completions model providers (openai-compatible,
      // openai.chat) send content parts to the model as JSON text, images as base64 in it.
      toModelOutput: ({ output }) => {
        const images = options.images === false ? [] : output.images
        if (images.length === 0) return { type: 'text', value: output.text }
        return {
          type: 'content',
          value: [
            { type: 'text', text: output.text },
            ...images.map((image) => ({
              type: 'image-data' as const,
              data: image.data,
              mediaType: image.mediaType,
            })),
          ],
        }
      },
    }),
    list_data: tool({
      description:
        'List the data files the code can read (at data/<name>), with their columns as pandas will read them.',
      inputSchema: jsonSchema<Record<string, never>>({
        type: 'object',
        properties: {},
        additionalProperties: false,
      }),
      execute: async () => {
        const files = await sandbox.files.list('data')
        if (files.length === 0) return 'No data files.'
        const names = files.map((file) => `data/${file.name}  ${file.size} bytes`).join('\n')
        if (!options.data?.length) return names
        described ??= describeData(options.data)
        return `${names}\n\n${await described}`
      },
    }),
  }
}
