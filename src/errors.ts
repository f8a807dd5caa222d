/**
 * The project's errors: one base with a hint and a structured fix, and a subclass per kind of
 * failure, each with the HTTP status a server answers it with. Every layer throws these; each
 * door (CLI, HTTP, MCP, the model's observation) maps them once, at its edge, and phrases the fix
 * for its reader (fixes.ts).
 *
 * A failure of the user's code is not an error here: it is `Execution.error`.
 * @module
 */
import type { Fix } from './fixes.js'

export type { Fix } from './fixes.js'

export interface ErrorOptions {
  cause?: unknown
  /** What the user can do about it, in words every door can show as they are. */
  hint?: string
  /** The setting that fixes it: each door names it in its own words (`--timeout`, `timeoutMs`). */
  fix?: Fix
}

/** The marker of one error class: from the global registry, so it holds across package copies. */
const markerOf = (name: string) => Symbol.for(`analyst.error.${name}`)

type ErrorClass = abstract new (...args: never[]) => AnalystError

/**
 * Base class. Each class has its own marker, set on every instance of it and of its subclasses, so
 * `NotFoundError.isInstance(e)` answers for NotFoundError alone and works across duplicate
 * package copies, unlike `instanceof` (the AI SDK's errors do the same, one symbol per class).
 */
export class AnalystError extends Error {
  /** The class's name and marker: each subclass declares its own. */
  static readonly errorName: string = 'AnalystError'
  /** What the user can do about it, when there is something. */
  readonly hint?: string
  /** The setting that fixes it, when one does. */
  readonly fix?: Fix
  /** The HTTP status that answers this error. */
  readonly status: number = 400

  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { cause: options.cause })
    const marks = this as unknown as Record<symbol, boolean>
    for (let type: object = new.target; type !== Error; type = Object.getPrototypeOf(type)) {
      if (!Object.hasOwn(type, 'errorName')) {
        throw new TypeError(
          `${(type as { name: string }).name} extends AnalystError without a static errorName of its own`,
        )
      }
      marks[markerOf((type as typeof AnalystError).errorName)] = true
    }
    this.name = (new.target as typeof AnalystError).errorName
    this.hint = options.hint
    this.fix = options.fix
  }

  /** True for an instance of this very class or of one of its subclasses, from any package copy. */
  static isInstance<T extends ErrorClass>(this: T, error: unknown): error is InstanceType<T> {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class asked (NotFoundError.isInstance), not the base.
    const marker = markerOf((this as unknown as typeof AnalystError).errorName)
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}

/** An argument or a request body is wrong. */
export class InvalidArgumentError extends AnalystError {
  static override readonly errorName: string = 'InvalidArgumentError'
  override readonly status = 400
}

/** No credentials, or credentials that are not valid. */
export class UnauthorizedError extends AnalystError {
  static override readonly errorName: string = 'UnauthorizedError'
  override readonly status = 401
}

/** Valid credentials that do not allow this. */
export class ForbiddenError extends AnalystError {
  static override readonly errorName: string = 'ForbiddenError'
  override readonly status = 403
}

/** A session, file, context or sandbox that does not exist (or is not the caller's). */
export class NotFoundError extends AnalystError {
  static override readonly errorName: string = 'NotFoundError'
  override readonly status = 404
}

/** It was there and is not any more (a table a kernel held, before the kernel restarted). */
export class GoneError extends AnalystError {
  static override readonly errorName: string = 'GoneError'
  override readonly status = 410
}

/** The thing is busy or in a state that does not allow this now (e.g. a question already running). */
export class ConflictError extends AnalystError {
  static override readonly errorName: string = 'ConflictError'
  override readonly status = 409
}

/** A session's data file is gone from the store: it cannot be resumed as it was. */
export class MissingDataError extends ConflictError {
  static override readonly errorName: string = 'MissingDataError'
}

/** An upload or a body over the limit. */
export class TooLargeError extends AnalystError {
  static override readonly errorName: string = 'TooLargeError'
  override readonly status = 413
}

/** An upload of a type that is not accepted. */
export class UnsupportedMediaError extends AnalystError {
  static override readonly errorName: string = 'UnsupportedMediaError'
  override readonly status = 415
}

/** Over a quota or rate limit; `retryAfterSeconds` when it is known. */
export class RateLimitError extends AnalystError {
  static override readonly errorName: string = 'RateLimitError'
  override readonly status = 429
  readonly retryAfterSeconds?: number
  constructor(message: string, options: ErrorOptions & { retryAfterSeconds?: number } = {}) {
    super(message, options)
    this.retryAfterSeconds = options.retryAfterSeconds
  }
}

/** No model is configured, or its configuration is wrong. */
export class ModelConfigError extends AnalystError {
  static override readonly errorName: string = 'ModelConfigError'
  override readonly status = 503
}

/** The model could not be reached or refused the request: not something the loop can repair. */
export class ModelCallError extends AnalystError {
  static override readonly errorName: string = 'ModelCallError'
  override readonly status = 502
}

/** The sandbox cannot be created here: missing bubblewrap, namespaces, Python or pandas, an engine that is down. */
export class SandboxUnavailableError extends AnalystError {
  static override readonly errorName: string = 'SandboxUnavailableError'
  override readonly status = 503
}

/** The sandbox broke in a way the caller cannot fix by changing the code it runs. */
export class SandboxError extends AnalystError {
  static override readonly errorName: string = 'SandboxError'
  override readonly status = 500
}

/** The service is stopping and takes no new work. */
export class ShuttingDownError extends AnalystError {
  static override readonly errorName: string = 'ShuttingDownError'
  override readonly status = 503
  constructor(message = 'The service is shutting down', options: ErrorOptions = {}) {
    super(message, { hint: 'Try again in a moment.', ...options })
  }
}

/** The HTTP status for any error: an AnalystError's own, 500 for anything else (a bug). */
export function statusOf(error: unknown): number {
  return AnalystError.isInstance(error) ? error.status : 500
}

/** A template's build failed: at `step` (when one step failed), for the reason the message gives. */
export class TemplateBuildError extends AnalystError {
  static override readonly errorName: string = 'TemplateBuildError'
  override readonly status = 422
  /** The step that failed: its number (from 1) and its title (`RUN apt-get …`). */
  readonly step?: { number: number; title: string }
  /** The last lines that the failed step wrote. */
  readonly log: string[]
  constructor(
    message: string,
    options: ErrorOptions & { step?: { number: number; title: string }; log?: string[] } = {},
  ) {
    super(message, options)
    this.step = options.step
    this.log = options.log ?? []
  }
}
