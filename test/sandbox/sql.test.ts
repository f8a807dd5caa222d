/**
 * sql() across the kernel protocol, on the local engine: the kernel asks, the host's QueryHost
 * answers, and the rows become a DataFrame whose dtypes keep what the source had. The QueryHost
 * here serves rows it holds in memory, so what is tested is the seam (the protocol, the types,
 * cancellation, the records); the real databases are tested with the sources (test/sources).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type QueryBatch,
  type QueryColumn,
  type QueryHost,
  type QueryOptions,
  type QueryRequest,
  Sandbox,
} from '../../src/index.js'
import { waitFor } from '../support/wait.js'

interface Table {
  columns: QueryColumn[]
  batches: QueryBatch[]
  truncated?: { by: 'rows'; limit: number; message: string }
}

/** Serves `tables` by query text; a query named `slow` waits until its signal aborts. */
class MemoryHost implements QueryHost {
  readonly sources = [{ name: 'shop', kind: 'postgres' as const }]
  readonly requests: Array<QueryRequest & { timeoutMs: number }> = []
  readonly aborted: string[] = []
  /** `slow` queries started and not yet cancelled: what would still run on a database server. */
  running = 0
  constructor(private readonly tables: Record<string, Table>) {}

  async run(request: QueryRequest, options: QueryOptions) {
    this.requests.push({ ...request, timeoutMs: options.timeoutMs })
    if (request.source && request.source !== 'shop') throw new Error(`No source named ${request.source}`)
    // As the real sources do (src/sources): a query whose signal was aborted already never starts.
    options.signal.throwIfAborted()
    if (request.query === 'slow') {
      this.running++
      await new Promise<void>((_, reject) =>
        options.signal.addEventListener('abort', () => {
          this.running--
          this.aborted.push(request.query)
          reject(new Error('cancelled on the server'))
        }),
      )
    }
    const table = this.tables[request.query]
    if (!table) throw new Error(`Refused: ${request.query} is not a query this host knows`)
    return {
      columns: table.columns,
      batches: (async function* () {
        yield* table.batches
      })(),
      summary: () => ({
        rows: table.batches.reduce((n, b) => n + b.rows, 0),
        durationMs: 1,
        ...(table.truncated ? { truncated: table.truncated } : {}),
      }),
    }
  }

  async describeTable(table: string) {
    return `Table ${table}: id int`
  }
}

const TYPES: Table = {
  columns: [
    { name: 'id', type: 'int' },
    { name: 'score', type: 'float' },
    { name: 'price', type: 'decimal' },
    { name: 'ok', type: 'bool' },
    { name: 'name', type: 'text' },
    { name: 'day', type: 'date' },
    { name: 'at', type: 'timestamptz' },
    { name: 'doc', type: 'json' },
    { name: 'key', type: 'uuid' },
  ],
  batches: [
    {
      rows: 2,
      values: [
        [1, null],
        [1.5, 'NaN'],
        ['10.10', null],
        [true, null],
        ['é', null],
        ['2024-02-29', null],
        ['2024-03-01T12:00:00+02:00', null],
        [{ a: [1, 2] }, null],
        ['123e4567-e89b-12d3-a456-426614174000', null],
      ],
    },
    {
      rows: 1,
      values: [['9007199254740993'], [null], ['0.1'], [false], ['z'], ['1999-12-31'], [null], [[]], [null]],
    },
  ],
}

describe('sql() in a local sandbox', () => {
  let sandbox: Sandbox
  const host = new MemoryHost({
    types: TYPES,
    empty: { columns: [{ name: 'x', type: 'int' }], batches: [] },
    // A second batch beyond int64 (Python ints) after one of Int64, cut at a cap of 3 rows.
    cut: {
      columns: [{ name: 'n', type: 'int' }],
      batches: [
        { rows: 2, values: [[1, null]] },
        { rows: 1, values: [['99999999999999999999']] },
      ],
      truncated: { by: 'rows', limit: 3, message: 'The result was cut at 3 rows: aggregate in SQL.' },
    },
  })

  beforeAll(async () => {
    sandbox = await Sandbox.create({ sources: host })
  })
  afterAll(async () => {
    await sandbox?.kill()
  })

  it('gives a DataFrame whose dtypes keep NULL apart from NaN, and the values as the source had them', async () => {
    const execution = await sandbox.runCode(
      [
        "df = sql('types')",
        'import math',
        'print(dict(df.dtypes.astype(str)))',
        'print(df.shape, repr(df.id[2]), df.id.isna().tolist())',
        'print(df.score.isna().tolist(), math.isnan(df.score[1]))',
        'print(repr(df.price[0]), df.ok.tolist(), df.name.tolist())',
        'print(df.day.dt.strftime("%Y-%m-%d").tolist(), str(df["at"][0]), df.doc[0], df.key[0].version)',
      ].join('\n'),
    )
    expect(execution.error).toBeUndefined()
    expect(execution.logs.stdout).toEqual([
      "{'id': 'Int64', 'score': 'Float64', 'price': 'object', 'ok': 'boolean', 'name': 'object', 'day': 'datetime64[ns]', 'at': 'datetime64[ns, UTC]', 'doc': 'object', 'key': 'object'}\n",
      '(3, 9) 9007199254740993 [False, True, False]\n',
      '[False, False, True] True\n',
      "Decimal('10.10') [True, <NA>, False] ['é', None, 'z']\n",
      "['2024-02-29', nan, '1999-12-31'] 2024-03-01 10:00:00+00:00 {'a': [1, 2]} 1\n",
    ])
    expect(execution.queries).toMatchObject([{ source: 'shop', query: 'types', rows: 3 }])
  })

  it('gives an empty result its columns', async () => {
    const execution = await sandbox.runCode("e = sql('empty')\nprint(e.shape, list(e.columns))")
    expect(execution.logs.stdout).toEqual(["(0, 1) ['x']\n"])
  })

  it('says when a cap cut the rows, and joins batches that became arrays of different kinds', async () => {
    const execution = await sandbox.runCode("c = sql('cut')\nprint(c.n.tolist(), c.n.dtype)")
    expect(execution.error).toBeUndefined()
    expect(execution.logs.stdout).toEqual(['[1, None, 99999999999999999999] object\n'])
    expect(execution.logs.stderr.join('')).toContain('[sql] The result was cut at 3 rows')
  })

  it('passes the source, the parameters and what is left of the cell as the timeout', async () => {
    await sandbox.runCode("sql('types', source='shop', params=[1, 'a'])", { timeoutMs: 30_000 })
    const last = host.requests.at(-1)
    expect(last).toMatchObject({ query: 'types', source: 'shop', params: [1, 'a'] })
    expect(last?.timeoutMs).toBeLessThanOrEqual(30_000)
  })

  it("raises the host's refusal in the cell as QueryError, and records it", async () => {
    const execution = await sandbox.runCode("sql('DROP TABLE orders')")
    expect(execution.error).toMatchObject({ name: 'QueryError', value: expect.stringMatching(/Refused/) })
    expect(execution.error?.traceback).toContain("sql('DROP TABLE orders')")
    expect(execution.queries).toMatchObject([
      { query: 'DROP TABLE orders', error: expect.stringMatching(/Refused/) },
    ])
    const wrongSource = await sandbox.runCode("sql('types', source='other')")
    expect(wrongSource.error?.value).toMatch(/No source named other/)
  })

  it('cancels a running query on its server when the cell times out, and the kernel keeps its state', async () => {
    await sandbox.runCode('kept = 5')
    const execution = await sandbox.runCode("sql('slow')", { timeoutMs: 1000 })
    expect(execution.error?.name).toBe('TimeoutError')
    expect(host.aborted).toEqual(['slow'])
    expect(execution.queries).toMatchObject([{ query: 'slow', error: expect.any(String) }])
    expect((await sandbox.runCode('kept')).text).toBe('5')
  })

  it('cancels it on its server when the caller aborts the cell while it runs', async () => {
    const controller = new AbortController()
    const running = sandbox.runCode("sql('slow')", { signal: controller.signal })
    await waitFor(() => host.running === 1, { what: 'the query on the host' })
    controller.abort(new Error('stop'))
    await expect(running).rejects.toThrow('stop')
    expect(host.aborted).toEqual(['slow', 'slow'])
    expect(host.running).toBe(0)
  })

  it('leaves no query running when the abort reaches the host before the query does', async () => {
    // The cell swallows the interrupt and asks anyway: its query comes after the cell was stopped.
    const asked = host.requests.length
    const controller = new AbortController()
    const running = sandbox.runCode(
      "import time\ntry:\n    print('asking', flush=True)\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    pass\nsql('slow')",
      { signal: controller.signal, onStdout: () => controller.abort(new Error('stop')) },
    )
    await expect(running).rejects.toThrow('stop')
    // It never reached the source (nothing to cancel there), and the sandbox goes on.
    expect(host.requests.length).toBe(asked)
    expect(host.running).toBe(0)
    expect((await sandbox.runCode('kept')).text).toBe('5')
  })

  it('leaves no query running whenever the abort comes', async () => {
    // The abort races the query: the kernel may be interrupted before it asks, while it asks, or
    // while it waits; none may leave the query to run on its server.
    const before = host.running
    const controller = new AbortController()
    const running = sandbox.runCode("print('asking', flush=True)\nsql('slow')", {
      signal: controller.signal,
      onStdout: () => controller.abort(new Error('stop')),
    })
    await expect(running).rejects.toThrow('stop')
    // The kernel's `done` came after its query, if it asked: the host has seen it by now.
    expect(host.running).toBe(before)
  })

  it("describe_table() shows the host's description as text", async () => {
    expect((await sandbox.runCode("describe_table('orders')")).text).toBe('Table orders: id int')
  })
})

describe('sql() without sources', () => {
  it('says the sandbox has no data sources', async () => {
    const sandbox = await Sandbox.create()
    try {
      const execution = await sandbox.runCode("sql('SELECT 1')")
      expect(execution.error).toMatchObject({
        name: 'QueryError',
        value: expect.stringMatching(/no data sources/),
      })
    } finally {
      await sandbox.kill()
    }
  })
})
