/**
 * globalSetup of the projects whose files take a database on the run's shared PostgreSQL server
 * (src/test/support/shared-postgres.ts). Its port is chosen and provided at once, and the cluster
 * made while the first files load: awaiting its initdb here would hold every worker. Each project
 * runs its globalSetup in its own module graph, so the one server is kept on globalThis and
 * stopped when the last project that took it tears down.
 */
import type { TestProject } from 'vitest/node'
import { freePort } from '../../src/test/support/ports.js'
import { type PostgresCluster, startPostgres } from '../../src/test/support/postgres.js'

interface Shared {
  port: number
  started: Promise<PostgresCluster | undefined>
  users: number
}
const scope = globalThis as { analystSharedPostgres?: Promise<Shared> }

async function start(): Promise<Shared> {
  const port = await freePort()
  const started = startPostgres({ port }).catch((error: Error) => {
    // The files that wait for it fail with a pointer here.
    process.stderr.write(`[postgres-setup] the shared PostgreSQL server did not start: ${error.message}\n`)
    return undefined
  })
  return { port, started, users: 0 }
}

export default async function setup(project: TestProject) {
  scope.analystSharedPostgres ??= start()
  const shared = await scope.analystSharedPostgres
  shared.users++
  project.provide('analystPostgresPort', shared.port)
  return async () => {
    if (--shared.users > 0) return
    scope.analystSharedPostgres = undefined
    await (await shared.started)?.stop()
  }
}
