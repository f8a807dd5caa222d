/**
 * `--modal-tool APP/FUNCTION[=description]`, the same on every door that runs the analyst (ask,
 * chat, serve, mcp, eval): the values checked against the mode, and each function looked up on
 * Modal before anything else starts, so that a mistake is said at once, not at the first question.
 * The Modal SDK loads only when the flag is given.
 * @module
 */
import type { AnalystTool } from '../agent/analyst.js'
import type { CodeMode } from '../models/index.js'
import { UsageError } from './errors.js'

/**
 * The analyst's settings for the flag's values: the functions as tools, and the tools mode (the
 * only one in which a model is offered tools, whatever the model's default); nothing without values.
 */
export async function modalToolSettings(
  values: string[] | undefined,
  options: { env?: NodeJS.ProcessEnv; mode?: CodeMode },
): Promise<{ tools?: AnalystTool[]; mode?: 'tools' }> {
  if (!values?.length) return {}
  if (options.mode === 'text') {
    throw new UsageError(
      '--modal-tool needs --mode tools: in text mode the model is offered no tools, so it could not call the function',
      'Leave out --mode text (with --modal-tool the model works in tools mode), or leave out --modal-tool.',
    )
  }
  const { modalSettings, modalTools } = await import('../sandbox/modal/index.js')
  return { tools: await modalTools(values, modalSettings(options.env ?? process.env)), mode: 'tools' }
}
