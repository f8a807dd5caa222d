/**
 * The project's errors: one base with a hint, and a subclass per kind of failure, each with the
 * HTTP status a server answers it with. Every layer throws these; each door (CLI, HTTP, MCP) maps
 * them once, at its edge.
 *
 * A failure of the user's code is not an error here: it is `Execution.error`.
 * @module
 */

const marker = Symbol.for('analyst.error')

export interface ErrorOptions {
  cause?: unknown
  /** What the user can do about it, in the words of the layer that knows. */
  hint?: string
}

/** Base class. `AnalystError.isInstance(e)` works across duplicate package copies, unlike `instanceof`. */
export class AnalystError extends Error {
  protected readonly [marker] = true
  /** What the user can do about it, when there is something. */
  readonly hint?: string
  /** The HTTP status that answers this error. */
  readonly status: number = 400

  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { cause: options.cause })
    this.name = 'AnalystError'
    this.hint = options.hint
  }

  static isInstance(error: unknown): error is AnalystError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}

/** An argument or a request body is wrong. */
export class InvalidArgumentError extends AnalystError {
  override readonly status = 400
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options)
    this.name = 'InvalidArgumentError'
  }
}

/** No credentials, or credentials that are not valid. */
export class UnauthorizedError extends AnalystError {
  override readonly status = 401
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options)
    this.name = 'UnauthorizedError'
  }
}

/** Valid credentials that do not allow this. */
export class ForbiddenError extends AnalystError {
  override readonly status = 403
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options)
    this.name = 'ForbiddenError'
  }
}

/** A session, file, context or sandbox that does not exist (or is not the caller's). */
export class NotFoundError extends AnalystError {
  override readonly status = 404
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options)
    this.name = 'NotFoundError'
  }
}

/** The thing is busy or in a state that does not allow this now (e.g. a question already running). */
export class ConflictError extends AnalystError {
  override readonly status = 409
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options)
    this.name = 'ConflictError'
  }
}

/** A session's data file is gone from the store: it cannot be resumed as it was. */
export class MissingDataError extends ConflictError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options)
    this.name = 'MissingDataError'
  }
}

/** An upload or a body over the limit. */
export class TooLargeError extends AnalystError {
  override readonly status = 413
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options)
    this.name = 'TooLargeError'
  }
}

/** An upload of a type that is not accepted. */
export class UnsupportedMediaError extends AnalystError {
  override readonly status = 415
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options)
    this.name = 'UnsupportedMediaError'
  }
}

/** Over a quota or rate limit; `retryAfterSeconds` when it is known. */
export class RateLimitError extends AnalystError {
  override readonly status = 429
  readonly retryAfterSeconds?: number
  constructor(message: string, options: ErrorOptions & { retryAfterSeconds?: number } = {}) {
    super(message, options)
    this.name = 'RateLimitError'
    this.retryAfterSeconds = options.retryAfterSeconds
  }
}

/** No model is configured, or its configuration is wrong. */
export class ModelConfigError extends AnalystError {
  override readonly status = 503
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options)
    this.name = 'ModelConfigError'
  }
}

/** The model could not be reached or refused the request: not something the loop can repair. */
export class ModelCallError extends AnalystError {
  override readonly status = 502
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options)
    this.name = 'ModelCallError'
  }
}

/** The sandbox cannot be created here: missing bubblewrap, namespaces, Python or pandas, an engine that is down. */
export class SandboxUnavailableError extends AnalystError {
  override readonly status = 503
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options)
    this.name = 'SandboxUnavailableError'
  }
}

/** The sandbox broke in a way the caller cannot fix by changing the code it runs. */
export class SandboxError extends AnalystError {
  override readonly status = 500
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options)
    this.name = 'SandboxError'
  }
}

/** The service is stopping and takes no new work. */
export class ShuttingDownError extends AnalystError {
  override readonly status = 503
  constructor(message = 'The service is shutting down', options: ErrorOptions = {}) {
    super(message, { hint: 'Try again in a moment.', ...options })
    this.name = 'ShuttingDownError'
  }
}

/** The HTTP status for any error: an AnalystError's own, 500 for anything else (a bug). */
export function statusOf(error: unknown): number {
  return AnalystError.isInstance(error) ? error.status : 500
}
