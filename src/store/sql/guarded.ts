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
  /** A query on this connection met a failure the classifier named (the database gone, the disk full). */
  failed = false

  constructor(
    readonly inner: DatabaseConnection,
    private readonly classify: Classify,
  ) {}

  read(error: unknown): unknown {
    const named = this.classify(error)
    if (named !== error) this.failed = true
    return named
  }

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.inner.executeQuery<R>(query).catch((error: unknown) => {
      throw this.read(error)
    })
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    try {
      yield* this.inner.streamQuery<R>(query, chunkSize)
    } catch (error) {
      throw this.read(error)
    }
  }
}

class GuardedDriver implements Driver {
  constructor(
    private readonly inner: Driver,
    private readonly classify: Classify,
  ) {}

  /** `work`'s failure, read by the classifier (and remembered by the connection it happened on). */
  private guard<T>(work: Promise<T>, connection?: DatabaseConnection): Promise<T> {
    return work.catch((error: unknown) => {
      throw connection instanceof GuardedConnection ? connection.read(error) : this.classify(error)
    })
  }

  init() {
    return this.guard(this.inner.init())
  }
  async acquireConnection(): Promise<DatabaseConnection> {
    return new GuardedConnection(await this.guard(this.inner.acquireConnection()), this.classify)
  }
  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings) {
    return this.guard(this.inner.beginTransaction(innerOf(connection), settings), connection)
  }
  commitTransaction(connection: DatabaseConnection) {
    return this.guard(this.inner.commitTransaction(innerOf(connection)), connection)
  }
  async rollbackTransaction(connection: DatabaseConnection) {
    try {
      await this.inner.rollbackTransaction(innerOf(connection))
    } catch (error) {
      // After SQLITE_FULL (SQLite has rolled back already) or a lost connection, the rollback's own
      // failure would hide the one that says what happened, which the transaction rethrows.
      if (connection instanceof GuardedConnection && connection.failed) return
      throw this.classify(error)
    }
  }
  /** A savepoint's step on the inner driver (every dialect here has them), read as any query is. */
  private async onSavepoint(
    step: 'savepoint' | 'rollbackToSavepoint' | 'releaseSavepoint',
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ) {
    await this.guard(Promise.resolve(this.inner[step]?.(innerOf(connection), name, compile)), connection)
  }
  savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']) {
    return this.onSavepoint('savepoint', connection, name, compile)
  }
  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']) {
    return this.onSavepoint('rollbackToSavepoint', connection, name, compile)
  }
  releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']) {
    return this.onSavepoint('releaseSavepoint', connection, name, compile)
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
