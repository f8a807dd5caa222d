/**
 * The errors the sandbox throws: failures of the sandbox itself. A failure of the user's code is
 * not thrown; it is `Execution.error`. They belong to the project's one hierarchy (src/errors.ts).
 * @module
 */
export {
  AnalystError,
  InvalidArgumentError,
  NotFoundError,
  SandboxError,
  SandboxUnavailableError,
} from '../errors.js'
