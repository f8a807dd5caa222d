import { describe, expect, it } from 'vitest'
import {
  AnalystError,
  ConflictError,
  DiskFullError,
  InvalidArgumentError,
  known,
  MissingDataError,
  ModelCallError,
  ModelConfigError,
  NotFoundError,
  RateLimitError,
  retryAfterOf,
  SandboxError,
  SandboxUnavailableError,
  ShuttingDownError,
  StoreUnavailableError,
  statusOf,
} from './errors.js'

describe('errors: each class answers isInstance for itself', () => {
  it('a class says no to an error of another class of the family', () => {
    const modelCall = new ModelCallError('the model said 401')
    expect(MissingDataError.isInstance(modelCall)).toBe(false)
    expect(ModelConfigError.isInstance(modelCall)).toBe(false)
    expect(SandboxUnavailableError.isInstance(new SandboxError('x'))).toBe(false)
    expect(RateLimitError.isInstance(new InvalidArgumentError('x'))).toBe(false)
    expect(ModelCallError.isInstance(modelCall)).toBe(true)
  })

  it('a subclass is an instance of its parents, not the other way round', () => {
    const missing = new MissingDataError('gone')
    expect(MissingDataError.isInstance(missing)).toBe(true)
    expect(ConflictError.isInstance(missing)).toBe(true)
    expect(AnalystError.isInstance(missing)).toBe(true)
    expect(MissingDataError.isInstance(new ConflictError('busy'))).toBe(false)
  })

  it('works across copies of the package (markers from the global symbol registry), unlike instanceof', () => {
    // What a second copy of the module would make: a plain object with the same markers.
    const foreign = Object.assign(Object.create(Error.prototype), new NotFoundError('elsewhere'))
    for (const symbol of Object.getOwnPropertySymbols(new NotFoundError('x'))) foreign[symbol] = true
    expect(foreign instanceof NotFoundError).toBe(false)
    expect(NotFoundError.isInstance(foreign)).toBe(true)
    expect(ModelCallError.isInstance(foreign)).toBe(false)
  })

  it('says no to anything else', () => {
    for (const value of [new Error('x'), null, undefined, 'NotFoundError', { name: 'NotFoundError' }]) {
      expect(AnalystError.isInstance(value)).toBe(false)
      expect(NotFoundError.isInstance(value)).toBe(false)
    }
  })

  it('names and statuses come from the class', () => {
    expect(new MissingDataError('x')).toMatchObject({ name: 'MissingDataError', status: 409 })
    expect(new ShuttingDownError()).toMatchObject({ name: 'ShuttingDownError', status: 503 })
    expect(new RateLimitError('slow down', { retryAfterSeconds: 3 })).toMatchObject({
      name: 'RateLimitError',
      status: 429,
      retryAfterSeconds: 3,
    })
    expect(statusOf(new ModelCallError('x'))).toBe(502)
    expect(statusOf(new Error('bug'))).toBe(500)
  })

  it('a class declared without its own name is refused when it is first made', () => {
    class Unnamed extends NotFoundError {}
    expect(() => new Unnamed('x')).toThrow(/errorName/)
  })
})

describe('errors: the machine failing (the disk full, the database gone)', () => {
  it('a full disk that a layer let through as ENOSPC, EDQUOT or SQLITE_FULL is a DiskFullError (507) at the door', () => {
    const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })
    const named = known(enospc)
    expect(DiskFullError.isInstance(named)).toBe(true)
    expect(named).toMatchObject({
      status: 507,
      message: expect.stringMatching(/disk is full/),
      cause: enospc,
    })
    expect(statusOf(enospc)).toBe(507)
    // Found as the cause of another error too.
    expect(statusOf(new Error('the upload failed', { cause: { code: 'EDQUOT' } }))).toBe(507)
    expect(statusOf(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }))).toBe(507)
    // Anything else is left as it is.
    const bug = new Error('bug')
    expect(known(bug)).toBe(bug)
    const missing = new NotFoundError('x', { cause: enospc })
    expect(known(missing)).toBe(missing)
  })

  it('the database gone is a 503 that says when to try again', () => {
    const gone = new StoreUnavailableError('The database is unavailable (connect ECONNREFUSED)')
    expect(gone).toMatchObject({ status: 503, retryAfterSeconds: 5, hint: expect.stringMatching(/5 s/) })
    expect(retryAfterOf(gone)).toBe(5)
    expect(retryAfterOf(new RateLimitError('slow down', { retryAfterSeconds: 60 }))).toBe(60)
    expect(retryAfterOf(new RateLimitError('slow down'))).toBeUndefined()
    expect(retryAfterOf(new DiskFullError())).toBeUndefined()
    expect(StoreUnavailableError.isInstance(new DiskFullError())).toBe(false)
  })
})
