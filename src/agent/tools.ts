/**
 * The tools a model is offered in tools mode: run_python, and the analyst's extra tools (e.g. a
 * function deployed on Modal, --modal-tool).
 * @module
 */
import { jsonSchema, type ToolSet, tool } from 'ai'
import type { CodeMode } from '../models/index.js'
import { LANGUAGE_PROFILES, type LanguageProfile, languageProfile } from './language.js'

export const RUN_PYTHON = 'run_python'

/** What an extra tool's call gives back. */
export interface ToolOutcome {
  observation: string
  files: Array<{ name: string; data: Uint8Array; mimeType: string }>
  /** false: the call failed, and `observation` says why. @default true */
  ok?: boolean
}

/**
 * A tool beside run_python (tools mode): its observation goes to the model; the files it returns
 * are written to the workspace, where code can use them, and are the step's artifacts.
 */
export interface AnalystTool {
  name: string
  description: string
  inputSchema: Record<string, unknown>
  /** `signal` aborts when the question is cancelled; the loop stops waiting for the call then. */
  call(input: unknown, options?: { signal?: AbortSignal }): Promise<ToolOutcome>
}

function runCodeTool(language: LanguageProfile) {
  return tool({
    description: `Run ${language.name} code in the stateful sandbox (a Jupyter-like kernel) and get back its output: stdout, the value of the last expression, errors with traceback, and the files it saved.`,
    // A plain JSON schema: converting a zod schema again on every model call costs milliseconds.
    inputSchema: jsonSchema<{ code: string }>({
      type: 'object',
      properties: { code: { type: 'string', description: `The complete ${language.name} code to run` } },
      required: ['code'],
      additionalProperties: false,
    }),
  })
}

/** The tool that runs code, one per language, made once. */
const RUN_CODE_TOOLS = {
  python: runCodeTool(LANGUAGE_PROFILES.python),
  r: runCodeTool(LANGUAGE_PROFILES.r),
}

/** The tools offered to the model: none in text mode (code comes as fenced blocks). */
export function offeredTools(
  mode: CodeMode,
  extras: AnalystTool[] = [],
  language: LanguageProfile = languageProfile('python'),
): ToolSet | undefined {
  if (mode !== 'tools') return undefined
  return {
    [language.tool]: RUN_CODE_TOOLS[language.language],
    ...Object.fromEntries(
      extras.map((extra) => [
        extra.name,
        tool({ description: extra.description, inputSchema: jsonSchema(extra.inputSchema) }),
      ]),
    ),
  }
}
