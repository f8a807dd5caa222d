/**
 * The errors the sandbox throws: failures of the sandbox itself. A failure of the user's code is
 * not thrown; it is `Execution.error`. They belong to the project's one hierarchy (src/errors.ts).
 * @module
 */
import { SandboxError } from '../errors.js'

export {
  AnalystError,
  CapacityError,
  ConflictError,
  InvalidArgumentError,
  NotFoundError,
  SandboxError,
  SandboxUnavailableError,
} from '../errors.js'

/** What every call on a killed sandbox throws. */
export function sandboxKilled(): SandboxError {
  return new SandboxError('This sandbox was killed', { hint: 'Create a new one with Sandbox.create().' })
}
