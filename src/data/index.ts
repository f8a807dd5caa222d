/**
 * Data understanding: profiles of data files as pandas will see them, and their prompt text.
 * @module
 */
export {
  DEFAULT_TOKENS_PER_FILE,
  estimateTokens,
  type FormatOptions,
  formatProfiles,
  joinHints,
} from './format.js'
export { prepareForSandbox, type SandboxFile } from './prepare.js'
export { type DataFile, profileFiles } from './profile.js'
export { type ReaderCheck, readerChecks } from './readers.js'
export type {
  Cell,
  ColumnProfile,
  DataFormat,
  DatasetProfile,
  ProfileOptions,
  SheetProfile,
} from './types.js'
