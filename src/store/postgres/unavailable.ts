/**
 * Which of node-postgres's errors mean "the database cannot be reached now" (stopped, restarting,
 * the network cut) rather than "this query is wrong": those become a StoreUnavailableError, a 503
 * with Retry-After at every door, and the pool's next connection finds the database once it is back.
 * @module
 */
import { StoreUnavailableError } from '../../errors.js'

/** The socket's failures: nobody listens, or the connection was cut. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
])

/**
 * PostgreSQL's SQLSTATEs for a server going away: 57P01 admin_shutdown (pg_ctl stop), 57P02
 * crash_shutdown, 57P03 cannot_connect_now (starting up or shutting down); class 08 is "connection
 * exception".
 */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03'])

/** node-postgres's own words for a lost or never-made connection (these errors carry no code). */
const LOST =
  /Connection terminated|timeout exceeded when trying to connect|is not queryable|Client was closed|Connection is closed|connection error/i

function isUnreachable(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 4) return false
  const code = String((error as { code?: unknown }).code ?? '')
  if (SOCKET_CODES.has(code) || SERVER_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true
  if (error instanceof Error && !('code' in error) && LOST.test(error.message)) return true
  // A connect to several addresses fails with each of their errors (AggregateError).
  const errors = (error as { errors?: unknown }).errors
  if (Array.isArray(errors) && errors.some((e) => isUnreachable(e, depth + 1))) return true
  return isUnreachable((error as { cause?: unknown }).cause, depth + 1)
}

/** A driver's error as the store says it: unreachable → StoreUnavailableError; else as it is. */
export function classifyPostgresError(error: unknown): unknown {
  if (!isUnreachable(error)) return error
  const why = error instanceof Error ? error.message : String(error)
  return new StoreUnavailableError(`The database is unavailable (${why || 'the connection was refused'})`, {
    cause: error,
  })
}
