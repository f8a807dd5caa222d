/**
 * Data files' row estimates (DuckDB views keep none): exact for small text files, with or without
 * a last newline and a header; within a few percent for a text file larger than the first read;
 * Parquet's count from its footer, through the source's description.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { estimateLineRows } from '../../src/sources/file-rows.js'
import { openSources } from './support.js'

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-file-rows-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const write = (name: string, text: string) => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

describe('rows of text files', () => {
  it('counts a small file exactly: the header is no row, a last line without newline is one', async () => {
    expect(await estimateLineRows(write('a.csv', 'x,y\n1,2\n3,4\n'))).toBe(2)
    expect(await estimateLineRows(write('b.csv', 'x,y\n1,2\n3,4'))).toBe(2)
    expect(await estimateLineRows(write('c.tsv', 'x\ty\n'))).toBe(0)
    expect(await estimateLineRows(write('d.ndjson', '{"x":1}\n{"x":2}\n{"x":3}\n'))).toBe(3)
  })

  it('estimates a file larger than the first read from its size, without reading it all', async () => {
    // Lines of varying length, as real data has: the estimate is within 5%.
    const rows = 200_000
    const lines = ['id,name,amount']
    for (let i = 0; i < rows; i++) lines.push(`${i},customer ${i % 977},${(i * 7.31) % 1000}`)
    const estimate = await estimateLineRows(write('big.csv', `${lines.join('\n')}\n`))
    expect(estimate).toBeGreaterThan(rows * 0.95)
    expect(estimate).toBeLessThan(rows * 1.05)
  })
})

describe('in the description', () => {
  it('gives CSV and Parquet views their rows', async () => {
    const parquet = join(dir, 'events.parquet')
    const instance = await DuckDBInstance.create(':memory:')
    const connection = await instance.connect()
    await connection.run(`COPY (SELECT range AS id FROM range(12345)) TO '${parquet}' (FORMAT parquet)`)
    connection.closeSync()
    instance.closeSync()
    const csv = write('visits.csv', 'page,visits\n/home,10\n/about,3\n/blog,8\n')
    const sources = await openSources([parquet, csv])
    try {
      const text = await sources.describeAll()
      expect(text).toContain('events (view, ~12,345 rows)')
      expect(text).toContain('visits (view, ~3 rows)')
    } finally {
      await sources.close()
    }
  })
})
