/**
 * Uploads too large for the sandbox: a CSV over the server's threshold stays on the host as a table
 * that sql() queries in place (DuckDB), and is not copied into data/; a small one goes into data/
 * as before. The table is there again after a restart, when the session's cells are replayed; a
 * large file DuckDB cannot read, or one whose table's name is taken, is refused with what to do.
 * A real server, real jails, a scripted model.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { LocalProvider } from '../../src/index.js'
import { ScriptedModel, type ScriptStep } from '../../src/models/scripted.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { askOverSse, type SseEvent } from '../support/sse.js'

const provider = new LocalProvider({ poolSize: 0 })
const home = mkdtempSync(join(tmpdir(), 'analyst-large-uploads-'))
const files = mkdtempSync(join(tmpdir(), 'analyst-large-upload-files-'))
/** Over this, an upload stays on the host (small, so that the test's files need not be large). */
const THRESHOLD = 50_000
let server: RunningServer | undefined

afterEach(async () => {
  await server?.close()
  server = undefined
})

afterAll(async () => {
  await provider.close()
  rmSync(home, { recursive: true, force: true })
  rmSync(files, { recursive: true, force: true })
})

async function start(script: ScriptStep[]) {
  const model = new ScriptedModel(script)
  server = await startServer({
    port: 0,
    home,
    tokens: [],
    provider,
    sqlOnlyBytes: THRESHOLD,
    model: async () => ({ model, spec: 'scripted:test', provider: 'custom', modelId: 'test', mode: 'tools' }),
  })
  return { url: server.url, model }
}

async function newSession(base: string): Promise<string> {
  const response = await fetch(`${base}/api/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  })
  return ((await response.json()) as { id: string }).id
}

async function upload(base: string, id: string, name: string, content: string | Buffer) {
  const form = new FormData()
  form.append('file', new Blob([typeof content === 'string' ? content : new Uint8Array(content)]), name)
  const response = await fetch(`${base}/api/sessions/${id}/files`, { method: 'POST', body: form })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

/** What the cells of a run printed, in order. */
const printed = (events: SseEvent[]) =>
  events
    .filter((event) => event.event === 'step-end')
    .map((event) =>
      String(
        (event.data.record as { execution?: { logs?: { stdout?: string[] } } }).execution?.logs?.stdout?.join(
          '',
        ) ?? '',
      ),
    )

// 6,000 orders: about 90 KB, over the threshold; the sums are known from how they are made.
const orders = [
  'id,region,amount',
  ...Array.from(
    { length: 6000 },
    (_, i) => `${i + 1},${['north', 'south', 'east'][i % 3]},${(i % 100) + 0.5}`,
  ),
].join('\n')
const expected: Record<string, number> = {}
for (let i = 0; i < 6000; i++) {
  const region = ['north', 'south', 'east'][i % 3] as string
  expected[region] = (expected[region] ?? 0) + (i % 100) + 0.5
}

describe('uploads too large for the sandbox', () => {
  it('stay on the host as tables that sql() queries, also after a restart', async () => {
    const query =
      "by = sql('SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region ORDER BY region')\n" +
      "import os\nprint(sorted(os.listdir('data')))\nprint(by.to_string(index=False))"
    const served = await start([
      { code: query },
      { text: 'Done.' },
      { code: 'print(len(by))' },
      { text: 'Three.' },
    ])
    let base = served.url
    const id = await newSession(base)

    const large = await upload(base, id, 'orders.csv', orders)
    expect(large.status).toBe(201)
    expect(large.body).toMatchObject({ name: 'orders.csv', profile: { sqlTable: 'orders', rows: 6000 } })
    expect((await upload(base, id, 'regions.csv', 'region,manager\nnorth,Ana\n')).status).toBe(201)

    const first = printed(await askOverSse(base, id, 'Orders by region?'))
    // The prompt describes the table for sql(), and names no data/orders.csv to read.
    const prompt = JSON.stringify(served.model.calls[0]?.prompt)
    expect(prompt).toMatch(/orders/)
    expect(prompt).toMatch(/amount/)
    expect(prompt).not.toContain('data/orders.csv')
    expect(first[0]).toContain("['regions.csv']")
    for (const [region, total] of Object.entries(expected)) {
      expect(first[0]).toMatch(new RegExp(`${region}\\s+2000\\s+${total.toFixed(1)}`))
    }

    // A new server over the same home: the session's cells replay with the table there again.
    await server?.close()
    base = (await start([{ code: 'print(len(by), int(by.n.sum()))' }, { text: 'Three regions.' }])).url
    const again = printed(await askOverSse(base, id, 'How many regions?'))
    expect(again[0]?.trim()).toBe('3 6000')
  }, 120_000)

  it('refuses a large file DuckDB cannot read, and a table name the session has', async () => {
    const base = (await start([])).url
    const id = await newSession(base)
    expect((await upload(base, id, 'orders.csv', orders)).status).toBe(201)

    const taken = await upload(base, id, 'orders.parquet.csv', orders)
    expect(taken.status).toBe(400)
    expect(taken.body.error).toMatchObject({
      message: expect.stringContaining('would be the SQL table "orders", a name this session already has'),
      hint: expect.stringContaining('Rename the file'),
    })

    // A workbook pandas reads, but DuckDB does not: over the threshold it has nowhere to go.
    const workbook = join(files, 'big.xlsx')
    execFileSync('/usr/bin/python3', [
      '-c',
      `import pandas as pd; pd.DataFrame({'n': range(20000), 's': ['x' * 20] * 20000}).to_excel(${JSON.stringify(workbook)}, index=False)`,
    ])
    expect(statSync(workbook).size).toBeGreaterThan(THRESHOLD)
    const unreadable = await upload(base, id, 'big.xlsx', readFileSync(workbook))
    expect(unreadable.status).toBe(400)
    expect(unreadable.body.error).toMatchObject({
      message:
        'big.xlsx is too large for the sandbox, and only CSV, TSV, Parquet and NDJSON files are kept on the host for sql()',
      hint: expect.stringContaining('Save it as CSV or Parquet'),
    })
    const listed = (await (await fetch(`${base}/api/sessions/${id}`)).json()) as {
      datasets: { name: string }[]
    }
    expect(listed.datasets.map((dataset) => dataset.name)).toEqual(['orders.csv'])
  }, 60_000)
})
