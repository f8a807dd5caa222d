import { describe, expect, it } from 'vitest'
import { StoreUnavailableError } from '../../errors.js'
import { classifyPostgresError } from './unavailable.js'

const coded = (message: string, code: string) => Object.assign(new Error(message), { code })

describe('PostgreSQL errors that mean the database is gone', () => {
  it.each([
    ['nobody listens', coded('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['the connection was cut', coded('read ECONNRESET', 'ECONNRESET')],
    ['pg_ctl stop -m fast', coded('terminating connection due to administrator command', '57P01')],
    ['starting up', coded('the database system is starting up', '57P03')],
    ['a connection exception (class 08)', coded('connection failure', '08006')],
    ['the pool gave up waiting', new Error('timeout exceeded when trying to connect')],
    ['the socket ended', new Error('Connection terminated unexpectedly')],
    [
      'every address refused',
      Object.assign(new AggregateError([coded('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED')], ''), {}),
    ],
  ])('%s: a StoreUnavailableError that keeps the cause', (_, error) => {
    const classified = classifyPostgresError(error)
    expect(StoreUnavailableError.isInstance(classified)).toBe(true)
    expect(classified).toMatchObject({ status: 503, cause: error })
    expect((classified as Error).message).toMatch(/^The database is unavailable/)
  })

  it.each([
    ['a unique violation', coded('duplicate key value violates unique constraint', '23505')],
    ['a syntax error', coded('syntax error at or near "selec"', '42601')],
    ['a serialization failure', coded('could not serialize access', '40001')],
    ['a bug', new TypeError('x is undefined')],
  ])('%s: left as it is', (_, error) => {
    expect(classifyPostgresError(error)).toBe(error)
  })
})
