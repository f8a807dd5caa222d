// Benchmark: sql() from a sandbox against the same work done without Analyst, in one run.
//  1. A generated CSV (10 GB; --quick 1 GB) queried in place, the sandbox's memory at 1 GiB: a
//     group-by and a top-k through sql(), against DuckDB alone (@duckdb/node-api, the same engine
//     and memory limit) on the same file; time and the peak memory of each side's process. Then
//     pandas in the same sandbox on the same file (it cannot hold it: what happens is recorded).
//  2. 1,000,000 rows × 10 columns of a real PostgreSQL into a DataFrame: sql() against
//     pandas.read_sql with Debian's psycopg2 on the host, and against COPY … TO STDOUT + read_csv.
// Run after `npm run build`: node bench/sources.mjs [--quick] [--only csv|pg] [--keep] [--runs N]
// Each side runs in a process of its own (node bench/sources.mjs --side NAME …) so that its peak
// memory (VmHWM) is its own. Prints a markdown section.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { machine, table } from './util.mjs'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const DIST = join(ROOT, 'dist')
const DIR = '/tmp/analyst-bench-sources'
const CSV = join(DIR, 'events.csv')
const PYTHON = '/usr/bin/python3'
const args = process.argv.slice(2)
const arg = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined)
const quick = args.includes('--quick')
const runs = Number(arg('--runs')) || (quick ? 1 : 2)
const GB = 1000 ** 3
const TARGET_BYTES = Number(arg("--bytes")) || (quick ? 1 : 10) * GB
const MEMORY_LIMIT = '2GB'

const QUERIES = {
  'group-by': 'SELECT region, count(*) AS n, sum(amount) AS total, avg(quantity) AS mean_qty FROM events GROUP BY region ORDER BY region',
  'top-k': 'SELECT customer_id, sum(amount) AS total FROM events GROUP BY customer_id ORDER BY total DESC LIMIT 10',
}

/** The peak resident memory of this process so far, in MiB. */
function peakMiB() {
  const kb = Number(readFileSync('/proc/self/status', 'utf8').match(/VmHWM:\s+(\d+)/)?.[1] ?? 0)
  return Math.round(kb / 1024)
}

const seconds = (ms) => (ms / 1000).toFixed(2)

// ---------------------------------------------------------------------------- sides (child processes)

/** sql() in a jail with 1 GiB, the file a source on the host: each query's wall time. */
async function sideSql(file, queries) {
  const { Sandbox } = await import(join(DIST, 'index.js'))
  const sandbox = await Sandbox.create({ sources: { events: file }, limits: { memoryBytes: 1024 ** 3 } })
  try {
    const times = {}
    for (const [name, query] of Object.entries(queries)) {
      const started = performance.now()
      const execution = await sandbox.runCode(`df = sql(${JSON.stringify(query)})\nlen(df)`, { timeoutMs: 1_800_000 })
      if (execution.error) throw new Error(`${name}: ${execution.error.value}`)
      times[name] = performance.now() - started
    }
    return { times, peakMiB: peakMiB() }
  } finally {
    await sandbox.kill()
  }
}

/** DuckDB alone on the same file: a view, the same queries, rows read out as sql() reads them. */
async function sideDuckdb(file, queries) {
  const { DuckDBInstance } = await import('@duckdb/node-api')
  const instance = await DuckDBInstance.create(':memory:', { memory_limit: MEMORY_LIMIT, temp_directory: join(DIR, 'spill') })
  const connection = await instance.connect()
  await connection.run(`CREATE VIEW events AS SELECT * FROM read_csv('${file.replace(/'/g, "''")}')`)
  const times = {}
  for (const [name, query] of Object.entries(queries)) {
    const started = performance.now()
    const reader = await connection.runAndReadAll(query)
    reader.getRowObjectsJS()
    times[name] = performance.now() - started
  }
  connection.closeSync()
  return { times, peakMiB: peakMiB() }
}

/** pandas in the same jail with 1 GiB, given the file as data/: what happens. */
async function sidePandas(file) {
  const { Sandbox } = await import(join(DIST, 'index.js'))
  const sandbox = await Sandbox.create({ data: [file], limits: { memoryBytes: 1024 ** 3 } })
  try {
    const started = performance.now()
    const execution = await sandbox.runCode("import pandas as pd\ndf = pd.read_csv('data/events.csv')\nlen(df)", {
      timeoutMs: 1_800_000,
    })
    const ms = performance.now() - started
    const outcome = execution.error ? `${execution.error.name}: ${execution.error.value}`.slice(0, 160) : `read ${execution.text} rows`
    return { ms, outcome }
  } finally {
    await sandbox.kill()
  }
}

/** sql() of every row of the table into a DataFrame, in a jail. */
async function sidePgSql(url) {
  const { Sandbox } = await import(join(DIST, 'index.js'))
  const sandbox = await Sandbox.create({ sources: { shop: url } })
  try {
    await sandbox.runCode('import pandas as pd')
    const started = performance.now()
    const execution = await sandbox.runCode("df = sql('SELECT * FROM wide')\ndf.shape", { timeoutMs: 600_000 })
    const ms = performance.now() - started
    if (execution.error) throw new Error(execution.error.value)
    return { ms, shape: execution.text, peakMiB: peakMiB() }
  } finally {
    await sandbox.kill()
  }
}

const sides = { sql: sideSql, duckdb: sideDuckdb, pandas: sidePandas, 'pg-sql': sidePgSql }
if (arg('--side')) {
  const result = await sides[arg('--side')](arg('--file'), QUERIES)
  process.stdout.write(JSON.stringify(result))
  process.exit(0)
}

function side(name, file) {
  const run = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--side', name, '--file', file], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 * 1024 * 1024,
  })
  if (run.status !== 0) throw new Error(`side ${name} failed (exit ${run.status})`)
  return JSON.parse(run.stdout)
}

// ---------------------------------------------------------------------------- 1. a CSV larger than memory

/** Whether the file was made now (false: an earlier run's, kept with --keep). */
async function generateCsv() {
  if (existsSync(CSV) && statSync(CSV).size >= TARGET_BYTES * 0.95) return false
  mkdirSync(DIR, { recursive: true })
  // A tenth of it from DuckDB (the same rows on every machine, about 50 bytes each), then ten
  // copies of that one after the header: generating every row would take longer than querying.
  const chunk = join(DIR, 'chunk.csv')
  const rows = Math.round(TARGET_BYTES / 10 / 50)
  const { DuckDBInstance } = await import('@duckdb/node-api')
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  await connection.run(`COPY (
      SELECT i AS id, i % 2000003 AS customer_id,
             ['north', 'south', 'east', 'west', 'central'][1 + (i * 7919 % 5)::int] AS region,
             ((i * 104729) % 100000) / 100.0 AS amount, 1 + (i * 13 % 9)::int AS quantity,
             DATE '2020-01-01' + (i % 1461)::int AS day, 'note ' || (i % 997)::varchar AS note,
             (i * 17 % 2 = 0) AS returned
      FROM range(${rows}) t(i)) TO '${chunk}' (HEADER false, DELIMITER ',')`)
  connection.closeSync()
  const header = 'id,customer_id,region,amount,quantity,day,note,returned\n'
  execFileSync('bash', ['-c', `{ printf '%s' "$0"; for i in 1 2 3 4 5 6 7 8 9 10; do cat "$1"; done; } > "$2"`, header, chunk, CSV])
  rmSync(chunk)
  return true
}

async function csvSection() {
  const started = performance.now()
  const generated = await generateCsv()
  const generatedIn = performance.now() - started
  const size = statSync(CSV).size
  const results = { sql: [], duckdb: [] }
  for (let run = 0; run < runs; run++) {
    // Alternated, so that the page cache favours neither.
    for (const name of run % 2 === 0 ? ['duckdb', 'sql'] : ['sql', 'duckdb']) results[name].push(side(name, CSV))
  }
  const best = (name, query) => Math.min(...results[name].map((r) => r.times[query]))
  const peak = (name) => Math.max(...results[name].map((r) => r.peakMiB))
  const pandas = side('pandas', CSV)
  const rows = Object.keys(QUERIES).map((query) => [
    query,
    seconds(best('duckdb', query)),
    seconds(best('sql', query)),
    `${(best('sql', query) / best('duckdb', query)).toFixed(2)}×`,
  ])
  return [
    `### sql() over a ${(size / GB).toFixed(1)} GB CSV, sandbox memory 1 GiB (best of ${runs})`,
    '',
    `${generated ? `Generated in ${seconds(generatedIn)} s` : 'Generated by an earlier run'}; ${runs} run(s) of each side, alternated. DuckDB's memory limit ${MEMORY_LIMIT} on both sides; goal ≤ 1.2×.`,
    '',
    table(['question', 'DuckDB alone (s)', 'sql() in a jail (s)', 'ratio'], rows),
    '',
    `Peak memory of the process: DuckDB alone ${peak('duckdb')} MiB, Analyst's host with sql() ${peak('sql')} MiB (the kernel's rows are the small results).`,
    `pandas.read_csv of the same file in the same 1 GiB sandbox: ${pandas.outcome} after ${seconds(pandas.ms)} s.`,
  ].join('\n')
}

// ---------------------------------------------------------------------------- 2. a million rows from PostgreSQL

async function pgSection() {
  const { startPostgres } = await import(join(DIST, 'test/support/postgres.js'))
  const pg = (await import('pg')).default
  const cluster = await startPostgres()
  try {
    const url = await cluster.createDatabase()
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query(`CREATE TABLE wide AS
      SELECT i AS id, i * 3 AS big, random() AS score, round((random() * 1000)::numeric, 2) AS price,
             'customer ' || (i % 50000) AS name, DATE '2020-01-01' + (i % 1461) AS day,
             TIMESTAMPTZ '2020-01-01 00:00:00+00' + i * INTERVAL '1 minute' AS at, i % 3 = 0 AS flag,
             md5(i::text) AS code, (i % 100)::int AS bucket
      FROM generate_series(1, 1000000) AS t(i)`)
    await client.query('VACUUM ANALYZE wide')
    await client.end()
    const python = (body) => {
      const script = `import time, io, psycopg2, pandas as pd\nconn = psycopg2.connect(${JSON.stringify(url)})\nstarted = time.perf_counter()\n${body}\nprint(time.perf_counter() - started, df.shape)`
      const [elapsed] = execFileSync(PYTHON, ['-c', script], { encoding: 'utf8' }).trim().split(' ')
      return Number(elapsed) * 1000
    }
    const measured = { sql: [], readSql: [], copy: [] }
    for (let run = 0; run < runs + 1; run++) {
      measured.readSql.push(python("df = pd.read_sql('SELECT * FROM wide', conn)"))
      measured.copy.push(
        python(
          "buf = io.StringIO()\nconn.cursor().copy_expert('COPY wide TO STDOUT WITH CSV HEADER', buf)\nbuf.seek(0)\ndf = pd.read_csv(buf)",
        ),
      )
      measured.sql.push(side('pg-sql', url).ms)
    }
    const best = (name) => Math.min(...measured[name])
    return [
      `### 1,000,000 rows × 10 columns from PostgreSQL into a DataFrame (best of ${runs + 1})`,
      '',
      table(
        ['way', 'seconds', 'ratio to read_sql'],
        [
          ['pandas.read_sql, psycopg2, on the host', seconds(best('readSql')), '1.00×'],
          ['COPY … TO STDOUT + read_csv, on the host', seconds(best('copy')), `${(best('copy') / best('readSql')).toFixed(2)}×`],
          ['sql() in a jail', seconds(best('sql')), `${(best('sql') / best('readSql')).toFixed(2)}×`],
        ],
      ),
      '',
      'Goal: sql() ≤ 1× read_sql. sql() keeps the types (Int64, Float64, Decimal, dates, UTC timestamps, boolean); COPY + read_csv gives text dates and float prices.',
    ].join('\n')
  } finally {
    await cluster.stop()
  }
}

const only = arg('--only')
const sections = [`## Sources: sql() (${machine()})`]
if (!only || only === 'csv') sections.push(await csvSection())
if (!only || only === 'pg') sections.push(await pgSection())
if (!args.includes('--keep')) rmSync(DIR, { recursive: true, force: true })
process.stdout.write(`${sections.join('\n\n')}\n`)
