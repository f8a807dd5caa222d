/**
 * A Kysely dialect whose every failure passes through the store's own classifier first: a driver's
 * error that means "the database is gone" (PostgreSQL restarting) or "the disk is full" (SQLite's
 * SQLITE_FULL) leaves the store as the Analyst error that says so, whatever query met it, and each
 * door answers it with its status (503, 507) instead of a 500.
 * @module
 */
import type {
  CompiledQuery,
  DatabaseConnection,
  Dialect,
  Driver,
  QueryCompiler,
  QueryResult,
  TransactionSettings,
} from 'kysely'

/** The store's reading of a driver's error: an Analyst error, or the error as it is. */
export type Classify = (error: unknown) => unknown

class GuardedConnection implements DatabaseConnection {
  constructor(
    readonly inner: DatabaseConnection,
    private readonly classify: Classify,
  ) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.inner.executeQuery<R>(query).catch((error: unknown) => {
      throw this.classify(error)
    })
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    try {
      yield* this.inner.streamQuery<R>(query, chunkSize)
    } catch (error) {
      throw this.classify(error)
    }
  }
}

class GuardedDriver implements Driver {
  constructor(
    private readonly inner: Driver,
    private readonly classify: Classify,
  ) {}

  private guard<T>(work: Promise<T>): Promise<T> {
    return work.catch((error: unknown) => {
      throw this.classify(error)
    })
  }

  init() {
    return this.guard(this.inner.init())
  }
  async acquireConnection(): Promise<DatabaseConnection> {
    return new GuardedConnection(await this.guard(this.inner.acquireConnection()), this.classify)
  }
  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings) {
    return this.guard(this.inner.beginTransaction(innerOf(connection), settings))
  }
  commitTransaction(connection: DatabaseConnection) {
    return this.guard(this.inner.commitTransaction(innerOf(connection)))
  }
  rollbackTransaction(connection: DatabaseConnection) {
    return this.guard(this.inner.rollbackTransaction(innerOf(connection)))
  }
  async savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']) {
    await this.guard(Promise.resolve(this.inner.savepoint?.(innerOf(connection), name, compile)))
  }
  async rollbackToSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ) {
    await this.guard(Promise.resolve(this.inner.rollbackToSavepoint?.(innerOf(connection), name, compile)))
  }
  async releaseSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ) {
    await this.guard(Promise.resolve(this.inner.releaseSavepoint?.(innerOf(connection), name, compile)))
  }
  releaseConnection(connection: DatabaseConnection) {
    return this.inner.releaseConnection(innerOf(connection))
  }
  destroy() {
    return this.inner.destroy()
  }
}

function innerOf(connection: DatabaseConnection): DatabaseConnection {
  return connection instanceof GuardedConnection ? connection.inner : connection
}

/** `dialect`, with every error of its driver read by `classify` before Kysely's callers see it. */
export function guarded(dialect: Dialect, classify: Classify): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new GuardedDriver(dialect.createDriver(), classify),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  }
}
