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

/**
 * A person (or a program, through the stop route) stopped a question or a cell: the reason its run
 * is recorded with, told apart from a connection that dropped. The kernel's state is kept.
 */
export class StoppedError extends AnalystError {
  static override readonly errorName: string = 'StoppedError'
  override readonly status = 409
  constructor(message = 'Stopped.', options: ErrorOptions = {}) {
    super(message, options)
  }
}

/**
 * The machine is full: the sandboxes' memory budget is used and none is idle to pause. Answered at
 * once with 503 and Retry-After, never by waiting.
 */
export class CapacityError extends AnalystError {
  static override readonly errorName: string = 'CapacityError'
  override readonly status = 503
  readonly retryAfterSeconds: number
  constructor(message: string, options: ErrorOptions & { retryAfterSeconds: number }) {
    super(message, {
      hint: `Try again in ${options.retryAfterSeconds} s, when a question or cell has ended; or stop a session you no longer need.`,
      ...options,
    })
    this.retryAfterSeconds = options.retryAfterSeconds
  }
}

/**
 * The database that keeps sessions cannot be reached (stopped, restarting, the network cut): each
 * request is answered at once with 503 and Retry-After, and the server keeps running for when it
 * is back.
 */
export class StoreUnavailableError extends AnalystError {
  static override readonly errorName: string = 'StoreUnavailableError'
  override readonly status = 503
  readonly retryAfterSeconds: number
  constructor(message: string, options: ErrorOptions & { retryAfterSeconds?: number } = {}) {
    const retryAfterSeconds = options.retryAfterSeconds ?? 5
    super(message, {
      hint: `Try again in ${retryAfterSeconds} s; if it lasts, check that the database (ANALYST_DATABASE_URL) is up.`,
      ...options,
    })
    this.retryAfterSeconds = retryAfterSeconds
  }
}

/** The server's disk (under ANALYST_HOME, or a sandbox's workspace) has no room for what was written. */
export class DiskFullError extends AnalystError {
  static override readonly errorName: string = 'DiskFullError'
  override readonly status = 507
  constructor(
    message = "The server's disk is full: what was sent could not be kept",
    options: ErrorOptions = {},
  ) {
    super(message, {
      hint: "Try again once space is freed: the server's operator frees disk space under ANALYST_HOME (or the workspace's files are made smaller).",
      ...options,
    })
  }
}

/** Node's and SQLite's codes for a write that found no room: the disk, or the user's quota, is full. */
const DISK_FULL_CODES = new Set(['ENOSPC', 'EDQUOT', 'SQLITE_FULL'])

/** Whether `error`, or an error it was caused by, is a write that found no room. */
export function isDiskFull(error: unknown): boolean {
  for (let e = error, depth = 0; typeof e === 'object' && e !== null && depth < 8; depth++) {
    if (DiskFullError.isInstance(e) || DISK_FULL_CODES.has(String((e as { code?: unknown }).code)))
      return true
    e = (e as { cause?: unknown }).cause
  }
  return false
}

/**
 * An error as a door answers it: a full disk that a lower layer let through as the system's own
 * error (ENOSPC) becomes a DiskFullError, which says what happened and what to do; anything else
 * is returned as it is.
 */
export function known(error: unknown): unknown {
  if (AnalystError.isInstance(error) || !isDiskFull(error)) return error
  return new DiskFullError(undefined, { cause: error })
}

/** The seconds a client should wait before it tries again, for the errors that know them. */
export function retryAfterOf(error: unknown): number | undefined {
  if (!AnalystError.isInstance(error)) return undefined
  const seconds = (error as { retryAfterSeconds?: unknown }).retryAfterSeconds
  return typeof seconds === 'number' ? seconds : undefined
}

/** The HTTP status for any error: an AnalystError's own, 500 for anything else (a bug). */
export function statusOf(error: unknown): number {
  const named = known(error)
  return AnalystError.isInstance(named) ? named.status : 500
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
