/**
 * The PostgreSQL store against a real server (a throwaway cluster on 127.0.0.1): the shared
 * suites (history with blobs in the database and in a shared folder, eval runs); then what only
 * PostgreSQL shows: replicas that start at once migrate once, a newer schema is refused, a wrong
 * URL is explained.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type SharedPostgres, sharedPostgres } from '../../test/support/shared-postgres.js'
import { describeAuthStoreConformance } from '../auth.case.js'
import { describeStoreConformance } from '../conformance.case.js'
import { describeEvalStoreConformance } from '../evals.case.js'
import { openStores, SqlTemplateFileStore, type Stores } from '../index.js'
import { CHUNK_BYTES } from '../sql/blobs.js'
import { SCHEMA_VERSION } from '../sql/schema.js'
import { describeTemplateBuildStoreConformance } from '../template-builds.case.js'
import type { AuthChange } from '../types.js'
import { AUTH_FEED_NAME, parseAuthChange } from './auth-feed.js'
import { PostgresHistoryStore } from './store.js'

let cluster: SharedPostgres
beforeAll(async () => {
  cluster = await sharedPostgres()
}, 120_000)
afterAll(async () => {})

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

describeTemplateBuildStoreConformance({
  name: 'postgres',
  async open() {
    return openStores('/nonexistent', { ANALYST_DATABASE_URL: await cluster.createDatabase() })
  },
  concurrent(stores) {
    const { db, runtime } = (stores as Stores).history as PostgresHistoryStore
    return {
      files: new SqlTemplateFileStore(db, runtime),
      async partialChunks() {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from template_file_chunks
          where file >= 'part-' and file < 'part.'`.execute(db)
        return Number(rows[0]?.n)
      },
    }
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

  it('tells every replica of a sign-in change (NOTIFY), and says so when it may have missed some', async () => {
    const url = await cluster.createDatabase()
    const one = await openStores('/nonexistent', { ANALYST_DATABASE_URL: url })
    const two = await openStores('/nonexistent', { ANALYST_DATABASE_URL: url })
    try {
      const heard: Array<AuthChange & { live: boolean }> = []
      two.auth.changes.subscribe((change) => heard.push({ ...change, live: two.auth.changes.live }))
      const user = await one.auth.upsertUser({
        issuer: 'https://id',
        subject: 's',
        name: 'S',
        groups: [],
        admin: false,
      })
      const key = await one.auth.createApiKey({ userId: user.id, label: 'ci', hash: 'e'.repeat(64) })
      await one.auth.revokeApiKey(user.id, key.id)
      const notice = { timeout: 5_000, interval: 10 }
      await expect.poll(() => heard, notice).toContainEqual({ kind: 'key', id: key.id, live: true })

      // The listening connections cut (a failover, a restart): 'all' while not live, then back.
      heard.length = 0
      const admin = new pg.Client({ connectionString: url })
      await admin.connect()
      try {
        const { rows } = await admin.query(
          'select pg_terminate_backend(pid) as cut from pg_stat_activity where application_name = $1 and datname = current_database()',
          [AUTH_FEED_NAME],
        )
        expect(rows).toHaveLength(2)
      } finally {
        await admin.end()
      }
      await expect.poll(() => heard[0], notice).toEqual({ kind: 'all', live: false })
      await expect.poll(() => two.auth.changes.live, notice).toBe(true)
      expect(heard.at(-1)).toEqual({ kind: 'all', live: true })
      // Listening again: the next change comes through.
      await one.auth.setUserDisabled(user.id, true)
      await expect.poll(() => heard, notice).toContainEqual({ kind: 'user', id: user.id, live: true })

      // A replica that starts probes its own connection; that is no change to the others.
      heard.length = 0
      const three = await openStores('/nonexistent', { ANALYST_DATABASE_URL: url })
      await three.close()
      await one.auth.setUserDisabled(user.id, false) // after the probe, in commit order
      await expect.poll(() => heard, notice).toContainEqual({ kind: 'user', id: user.id, live: true })
      expect(heard.filter((change) => change.kind === 'all')).toEqual([])
    } finally {
      await one.close()
      await two.close()
    }
  })

  it('reads a notice as kind and id, and anything else as "forget everything"', () => {
    expect(parseAuthChange('key:1f2e')).toEqual({ kind: 'key', id: '1f2e' })
    expect(parseAuthChange('session:ab:cd')).toEqual({ kind: 'session', id: 'ab:cd' })
    expect(parseAuthChange('share:1')).toEqual({ kind: 'all' })
    expect(parseAuthChange('all')).toEqual({ kind: 'all' })
    expect(parseAuthChange(undefined)).toEqual({ kind: 'all' })
  })
})
