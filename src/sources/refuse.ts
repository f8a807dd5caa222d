/**
 * A refused statement: which rule it broke and what to do instead. The database role is the real
 * barrier; these checks keep model-written SQL from reaching files, programs and other servers
 * whatever the role may do.
 * @module
 */
import { ForbiddenError, InvalidArgumentError } from '../errors.js'

export function refuse(rule: string, instead: string): ForbiddenError {
  return new ForbiddenError(`The query was refused: ${rule}`, { hint: instead })
}

export const ONLY_QUERIES = 'Only queries run here (SELECT, WITH, VALUES, EXPLAIN), read-only.'

export function notOneStatement(count: number): ForbiddenError {
  return count === 0
    ? refuse('it holds no statement', 'Pass one SELECT statement to sql().')
    : refuse(`it holds ${count} statements, and sql() runs one a call`, 'Call sql() once for each statement.')
}

export function unparsable(message: string): InvalidArgumentError {
  return new InvalidArgumentError(`The query could not be parsed: ${message}`, {
    hint: 'Check the SQL syntax for this database; pass one SELECT statement.',
  })
}
