/**
 * The server's structured logs: JSON lines (pino) on stdout, at ANALYST_LOG_LEVEL (default info;
 * `silent` turns them off). Each request's lines carry its request id, and its session id where
 * the route names a session; nothing logs a token, a header, a question's text or uploaded data.
 * @module
 */
import { type DestinationStream, type Logger, pino } from 'pino'

export function createLogger(env: NodeJS.ProcessEnv = process.env, destination?: DestinationStream): Logger {
  const options = {
    level: env.ANALYST_LOG_LEVEL || 'info',
    base: { service: 'analyst' },
    // Belt and braces: should a header ever reach a log line, its secrets do not.
    redact: {
      paths: ['authorization', '*.authorization', 'headers.authorization', 'token', '*.token'],
      censor: '[redacted]',
    },
  }
  return destination ? pino(options, destination) : pino(options)
}
