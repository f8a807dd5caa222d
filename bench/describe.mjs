// Benchmark: describing a 500-table schema for the model (issue #23, goal ≤ 1 s), in a real
// PostgreSQL (a throwaway cluster from src/test/support/postgres.ts) and in a SQLite file. Each
// table has 8 columns, a primary key, a foreign key to the one before, a comment, 20 rows; half
// are analysed (PostgreSQL samples them from pg_stats), half not (their first rows are read).
// Measured through `Sources`, as the prompt and `analyst profile` ask it:
//   - catalog: the tables, columns, keys, estimates and comments (a fresh Sources each run);
//   - prompt: the description within the prompt's budget for a question (12,000 characters);
//   - profile: every table in full, sampled (what `analyst profile` prints).
// Baseline in the same run: the same columns read one table at a time (a query per table), as
// a naive describer would. Run after `npm run build`: node bench/describe.mjs [--quick]
// Prints a markdown section.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { parseSource, Sources } from '../dist/sources/index.js'
import { startPostgres } from '../dist/test/support/postgres.js'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const TABLES = 500
const runs = quick ? 3 : 7
const QUESTION = 'What is the total amount per region for table_0250, with its customer names?'

function ddl(i, { comments }) {
  const fk =
    i > 0 ? `, parent_id int REFERENCES table_${String(i - 1).padStart(4, '0')}(id)` : ', parent_id int'
  const name = `table_${String(i).padStart(4, '0')}`
  return [
    `CREATE TABLE ${name} (id int PRIMARY KEY${fk}, region text, amount numeric(10, 2), quantity int, day date, note text, flag boolean)`,
    comments ? `COMMENT ON TABLE ${name} IS 'Table number ${i}, one row per thing'` : '',
  ]
    .filter(Boolean)
    .join(';\n')
}

function rows(i) {
  const values = []
  for (let r = 1; r <= 20; r++)
    values.push(
      `(${r}, ${i > 0 ? r : 'NULL'}, '${['north', 'south', 'east'][r % 3]}', ${r * 1.5}, ${r}, '2024-01-${String((r % 28) + 1).padStart(2, '0')}', 'note ${r}', ${r % 2 === 0})`,
    )
  return values.join(', ')
}

/** Runs `fn` on a freshly opened Sources each time (the connection is not timed: a session opens it once). */
async function time(spec, fn) {
  const times = []
  let last
  for (let run = 0; run < runs; run++) {
    const sources = await Sources.open([spec])
    try {
      const started = performance.now()
      last = await fn(sources)
      times.push(performance.now() - started)
    } finally {
      await sources.close()
    }
  }
  return { p50: percentile(times, 50), max: Math.max(...times), last }
}

async function timeBaseline(fn) {
  const times = []
  for (let run = 0; run < runs; run++) {
    times.push(await fn())
  }
  return { p50: percentile(times, 50), max: Math.max(...times) }
}

const ms = (value) => `${value.toFixed(1)} ms`
const loadAvg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(', ')

async function measure(spec, baseline) {
  // The catalog alone: its bulk queries, nothing sampled.
  const catalogOnly = await time(
    spec,
    async (sources) => (await sources.groups()[0].source.catalog()).tables.length,
  )
  const prompt = await time(
    spec,
    async (sources) => (await sources.describe({ budgetChars: 12_000, question: QUESTION })).length,
  )
  const profile = await time(spec, async (sources) => (await sources.describeAll()).length)
  const naive = await timeBaseline(baseline)
  return { catalogOnly, prompt, profile, naive }
}
const loadBefore = loadAvg()

// PostgreSQL
const cluster = await startPostgres()
const url = await cluster.createDatabase('bench')
const admin = new pg.Client({ connectionString: url })
await admin.connect()
for (let i = 0; i < TABLES; i++) {
  await admin.query(
    `${ddl(i, { comments: i % 5 === 0 })}; INSERT INTO table_${String(i).padStart(4, '0')} VALUES ${rows(i)}`,
  )
}
for (let i = 0; i < TABLES; i += 2) await admin.query(`ANALYZE table_${String(i).padStart(4, '0')}`)
const pgSpec = parseSource(url)
const pgResult = await measure(pgSpec, async () => {
  // A query per table, the columns of each (what a naive describer does).
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const started = performance.now()
    const { rows: tables } = await client.query(
      "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'",
    )
    for (const { oid } of tables)
      await client.query(
        'SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped',
        [oid],
      )
    return performance.now() - started
  } finally {
    await client.end()
  }
})
await admin.end()
await cluster.stop()

// SQLite
const dir = mkdtempSync(join(tmpdir(), 'analyst-bench-describe-'))
const file = join(dir, 'bench.db')
const db = new Database(file)
db.exec('BEGIN')
for (let i = 0; i < TABLES; i++) {
  db.exec(ddl(i, { comments: false }).replace(/numeric\(10, 2\)/, 'NUMERIC'))
  db.exec(
    `INSERT INTO table_${String(i).padStart(4, '0')} VALUES ${rows(i)
      .replace(/\btrue\b/g, '1')
      .replace(/\bfalse\b/g, '0')}`,
  )
}
db.exec('COMMIT')
db.exec('ANALYZE')
db.close()
const sqliteResult = await measure(parseSource(`sqlite:${file}`), async () => {
  const reader = new Database(file, { readonly: true })
  try {
    const started = performance.now()
    const names = reader.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all()
    for (const { name } of names) reader.prepare('SELECT * FROM pragma_table_info(?)').all(name)
    return performance.now() - started
  } finally {
    reader.close()
  }
})
rmSync(dir, { recursive: true, force: true })

const row = (kind, r) => [
  kind,
  `${ms(r.catalogOnly.p50)} (max ${ms(r.catalogOnly.max)})`,
  `${ms(r.prompt.p50)} (${r.prompt.last} chars)`,
  `${ms(r.profile.p50)} (${Math.round(r.profile.last / 1024)} KiB)`,
  `${ms(r.naive.p50)}`,
  `${(r.catalogOnly.p50 / r.naive.p50).toFixed(2)}×`,
  `prompt: ${r.prompt.p50 <= 1000 ? 'met' : 'not met'}; profile: ${r.profile.p50 <= 1000 ? 'met' : 'not met'}`,
]

process.stdout.write(`### Describing a 500-table schema (${machine()})

${TABLES} tables of 8 columns (a primary key, a foreign key to the table before, comments on every fifth in PostgreSQL), 20 rows each, half analysed; ${runs} runs each, p50, every run on a freshly opened \`Sources\` (opening it, done once a session, not timed). "catalog": the catalog's bulk queries alone; "prompt": the description within the prompt's 12,000 characters for a question on one table; "profile": every table in full with samples (\`analyst profile\`); baseline: the columns alone, read with a query per table on a connection opened beforehand (PostgreSQL: pg, SQLite: better-sqlite3 in process), same run. Goal ≤ 1 s. Load average before/after: ${loadBefore} / ${loadAvg()}.

${table(
  [
    'source',
    'catalog',
    'prompt',
    'profile (all 500 sampled)',
    'baseline: a query per table',
    'catalog / baseline',
    'goal ≤ 1 s',
  ],
  [row('PostgreSQL 15', pgResult), row('SQLite', sqliteResult)],
)}
`)
