/**
 * Errors the sandbox throws: failures of the sandbox itself. A failure of the user's code is not
 * thrown; it is `Execution.error`.
 * @module
 */

const marker = Symbol.for('analyst.error')

/** Base class. `AnalystError.isInstance(e)` works across duplicate package copies, unlike `instanceof`. */
export class AnalystError extends Error {
  protected readonly [marker] = true

  /** What the user can do about it, when there is something. */
  readonly hint?: string

  constructor(message: string, options: { cause?: unknown; hint?: string } = {}) {
    super(message, { cause: options.cause })
    this.name = 'AnalystError'
    this.hint = options.hint
  }

  static isInstance(error: unknown): error is AnalystError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}

/** The sandbox cannot be created here: missing bubblewrap, namespaces, Python or pandas. */
export class SandboxUnavailableError extends AnalystError {
  constructor(message: string, options: { cause?: unknown; hint?: string } = {}) {
    super(message, options)
    this.name = 'SandboxUnavailableError'
  }
}

/** The sandbox broke in a way the caller cannot fix by changing the code it runs. */
export class SandboxError extends AnalystError {
  constructor(message: string, options: { cause?: unknown; hint?: string } = {}) {
    super(message, options)
    this.name = 'SandboxError'
  }
}

/** An argument the caller passed is wrong. */
export class InvalidArgumentError extends AnalystError {
  constructor(message: string, options: { cause?: unknown; hint?: string } = {}) {
    super(message, options)
    this.name = 'InvalidArgumentError'
  }
}

/** A file or context that does not exist. */
export class NotFoundError extends AnalystError {
  constructor(message: string, options: { cause?: unknown; hint?: string } = {}) {
    super(message, options)
    this.name = 'NotFoundError'
  }
}
