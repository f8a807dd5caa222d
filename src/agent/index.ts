/**
 * The analyst: the loop that turns a question into code, runs it, repairs it and answers.
 * @module
 */
export {
  Analyst,
  type AnalystOptions,
  type AnalystTool,
  type CodeCheck,
  ModelCallError,
  RUN_PYTHON,
  type ToolOutcome,
} from './analyst.js'
export type { AgentEvent, AskResult, RefusedFile, StepRecord, Usage, Violation } from './events.js'
export { type ExtractedCode, extractCode } from './extract.js'
export { Evidence, statedNumbers, unsupportedNumbers } from './grounding.js'
export { ANALYSIS_LANGUAGES, type AnalysisLanguage, LANGUAGE_PROFILES, languageProfile } from './language.js'
export { observe, refusedNote, truncateMiddle } from './observation.js'
export { sourcesSection, systemPrompt } from './prompt.js'
