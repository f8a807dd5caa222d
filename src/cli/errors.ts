/**
 * How commands end. Commands throw; only bin.ts calls process.exit.
 * @module
 */

import { AnalystError } from '../errors.js'

/** Ends the command with this exit code, after printing `message` (if any) to stderr. */
export class ExitError extends AnalystError {
  static override readonly errorName: string = 'ExitError'
  constructor(
    readonly code: number,
    message = '',
    hint?: string,
  ) {
    super(message, { hint })
  }
}

/** The command line was wrong: exit 2 with a message that says what to do. */
export class UsageError extends ExitError {
  static override readonly errorName: string = 'UsageError'
  constructor(message: string, hint?: string) {
    super(2, message, hint)
  }
}

export const EXIT = { ok: 0, failed: 1, usage: 2 } as const
