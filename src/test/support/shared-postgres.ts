/**
 * The test run's one PostgreSQL server: a cluster's initdb and start cost about 1.2 CPU-s and 3–4 s,
 * which each file that only needs a database of its own used to pay. test/support/postgres-setup.ts
 * (the projects' globalSetup) starts it and tells the files its port; a file takes a new database
 * on it. A file that stops the server, or changes who may sign in (pg_hba.conf, roles that other
 * files name too), starts a cluster of its own (postgres.ts' startPostgres).
 * @module
 */
import { inject } from 'vitest'
import { createDatabase, type PostgresCluster, postgresUrl, untilAccepting } from './postgres.js'

declare module 'vitest' {
  export interface ProvidedContext {
    /** The shared server's port, provided before it takes connections (it starts beside the first files). */
    analystPostgresPort: number
  }
}

/** What a file may do with the shared server: no halt, resume, requirePassword or stop. */
export type SharedPostgres = Pick<PostgresCluster, 'port' | 'url' | 'createDatabase'>

/** The shared server, once it takes connections (its start began with the run). */
export async function sharedPostgres(): Promise<SharedPostgres> {
  const port = inject('analystPostgresPort')
  if (!port) {
    throw new Error(
      'No shared PostgreSQL in this vitest project: add test/support/postgres-setup.ts to its globalSetup (vitest.config.ts), or use startPostgres()',
    )
  }
  // Its start may be under way still; on a loaded machine an initdb alone can take many seconds.
  await untilAccepting(port, 120_000).catch((error: Error) => {
    throw new Error(
      `The shared PostgreSQL server (port ${port}) takes no connections: ${error.message}. Its start's error, if any, is in vitest's output ("[postgres-setup]").`,
    )
  })
  return {
    port,
    url: (database) => postgresUrl(port, database),
    createDatabase: (name) => createDatabase(port, name),
  }
}
