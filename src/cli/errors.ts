/**
 * How commands end. Commands throw; only bin.ts calls process.exit.
 * @module
 */

import { AnalystError } from '../errors.js'

/** Ends the command with this exit code, after printing `message` (if any) to stderr. */
export class ExitError extends AnalystError {
  constructor(
    readonly code: number,
    message = '',
    hint?: string,
  ) {
    super(message, { hint })
    this.name = 'ExitError'
  }
}

/** The command line was wrong: exit 2 with a message that says what to do. */
export class UsageError extends ExitError {
  constructor(message: string, hint?: string) {
    super(2, message, hint)
    this.name = 'UsageError'
  }
}

export const EXIT = { ok: 0, failed: 1, usage: 2 } as const
