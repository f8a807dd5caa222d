/**
 * The PostgreSQL store against a real server (a throwaway cluster on 127.0.0.1): the shared
 * suites (history with blobs in the database and in a shared folder, eval runs); then what only
 * PostgreSQL shows: replicas that start at once migrate once, a newer schema is refused, a wrong
 * URL is explained.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PostgresCluster, startPostgres } from '../../test/support/postgres.js'
import { describeAuthStoreConformance } from '../auth.case.js'
import { describeStoreConformance } from '../conformance.case.js'
import { describeEvalStoreConformance } from '../evals.case.js'
import { openStores } from '../index.js'
import { CHUNK_BYTES } from '../sql/blobs.js'
import { SCHEMA_VERSION } from '../sql/schema.js'
import { PostgresHistoryStore } from './store.js'

let cluster: PostgresCluster
beforeAll(async () => {
  cluster = await startPostgres()
}, 120_000)
afterAll(async () => {
  await cluster?.stop()
})

describeStoreConformance({
  name: 'postgres + blobs in the database',
  async open() {
    const stores = await openStores('/nonexistent', { ANALYST_DATABASE_URL: await cluster.createDatabase() })
    expect(stores.blobs.provider).toBe('postgres')
    return stores
  },
})

describeEvalStoreConformance({
  name: 'postgres',
  async open() {
    return openStores('/nonexistent', { ANALYST_DATABASE_URL: await cluster.createDatabase() })
  },
})

describeAuthStoreConformance({
  name: 'postgres',
  async open() {
    return openStores('/nonexistent', { ANALYST_DATABASE_URL: await cluster.createDatabase() })
  },
})

describeStoreConformance({
  name: 'postgres + a shared blob folder',
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'analyst-blobs-'))
    const stores = await openStores('/nonexistent', {
      ANALYST_DATABASE_URL: await cluster.createDatabase(),
      ANALYST_BLOB_DIR: dir,
    })
    return {
      ...stores,
      close: async () => {
        await stores.close()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  },
})

describe('PostgreSQL database', () => {
  const query = async <T>(url: string, text: string) => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      return (await client.query(text)).rows as T[]
    } finally {
      await client.end()
    }
  }

  it('migrates once when several replicas open a new database at once', async () => {
    const url = await cluster.createDatabase()
    const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresHistoryStore.open(url)))
    try {
      expect(await query(url, 'select version from analyst_schema')).toEqual([{ version: SCHEMA_VERSION }])
      const session = await stores[0]?.createSession({ title: 'shared' })
      expect((await stores[3]?.getSession(session?.id as string))?.title).toBe('shared')
    } finally {
      await Promise.all(stores.map((store) => store.close()))
    }
  })

  it('keeps blobs in chunks, and a failed upload leaves none behind', async () => {
    const url = await cluster.createDatabase()
    const stores = await openStores('/nonexistent', { ANALYST_DATABASE_URL: url })
    try {
      const big = Buffer.alloc(CHUNK_BYTES * 2 + 10, 1)
      await stores.blobs.put(big)
      await expect(
        stores.blobs.put(Buffer.alloc(CHUNK_BYTES * 3, 2), { maxBytes: CHUNK_BYTES * 2 }),
      ).rejects.toMatchObject({
        status: 413,
      })
      expect(
        await query(url, 'select blob, seq, length(data) as n from blob_chunks order by seq'),
      ).toMatchObject([
        { seq: 0, n: CHUNK_BYTES },
        { seq: 1, n: CHUNK_BYTES },
        { seq: 2, n: 10 },
      ])
    } finally {
      await stores.close()
    }
  })

  it('refuses a database from a newer Analyst, saying what to do', async () => {
    const url = await cluster.createDatabase()
    await (await PostgresHistoryStore.open(url)).close()
    await query(url, `update analyst_schema set version = ${SCHEMA_VERSION + 1}`)
    await expect(PostgresHistoryStore.open(url)).rejects.toMatchObject({
      message: expect.stringMatching(/newer/),
      hint: expect.stringMatching(/Upgrade Analyst/),
    })
  })

  it('says which database it cannot reach, without the password', async () => {
    const error = await PostgresHistoryStore.open(
      `postgres://me:secret@127.0.0.1:${cluster.port}/missing`,
    ).catch((e: unknown) => e)
    expect(error).toMatchObject({
      message: expect.stringMatching(
        /Cannot open the PostgreSQL database postgres:\/\/me:\*\*\*@127\.0\.0\.1.*missing/,
      ),
      hint: expect.stringMatching(/ANALYST_DATABASE_URL/),
    })
    expect((error as Error).message).not.toContain('secret')
  })
})
