/**
 * What `--data` says about a source, before anything connects: its kind, its name and where it is.
 * `postgres://…` / `postgresql://…`, `mysql://…` / `mariadb://…`, `sqlite:path.db`,
 * `duckdb:path.duckdb`, or a data file by path (CSV/TSV, Parquet, NDJSON, optionally gzipped) that
 * DuckDB queries in place; `NAME=URL` names it. `${VAR}` is taken from the environment, and the
 * password is kept apart from the URL so that nothing shown or stored can carry it (`redact`).
 * @module
 */
import { basename, resolve } from 'node:path'
import { InvalidArgumentError } from '../errors.js'
import type { QuerySourceInfo } from '../sandbox/query.js'

export type SourceKind = QuerySourceInfo['kind']

export interface SourceSpec {
  name: string
  kind: SourceKind
  /** postgres/mysql: the URL without its password; sqlite/duckdb/file: an absolute path. */
  location: string
  /** postgres/mysql only; never shown, stored or sent to the sandbox. */
  password?: string
}

const FILE_PATTERN = /\.(csv|tsv|txt|parquet|ndjson|jsonl|json)(\.gz)?$/i
const NAME_PATTERN = /^([A-Za-z_][A-Za-z0-9_]*)=(.+)$/s

/** True when an argument of `--data` is a source for SQL rather than a file to copy in. */
export function isDatabaseUrl(argument: string): boolean {
  const value = NAME_PATTERN.exec(argument)?.[2] ?? argument
  return /^(postgres|postgresql|mysql|mariadb):\/\//i.test(value) || /^(sqlite|duckdb):/i.test(value)
}

/** True when the path names a file DuckDB can query in place. */
export function isQueryableFile(path: string): boolean {
  return FILE_PATTERN.test(path)
}

/** `${VAR}` replaced by the variable's value; a variable that is not set is an error that names it. */
export function expandEnv(text: string, env: NodeJS.ProcessEnv): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, variable: string) => {
    const value = env[variable]
    if (value === undefined) {
      throw new InvalidArgumentError(`The source's URL uses \${${variable}}, which is not set`, {
        hint: `Set ${variable} in the environment, or write the value in the URL.`,
      })
    }
    return value
  })
}

/** A URL with its password (if any) replaced by `***`: the form for messages, logs and the store. */
export function redact(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/?#@]*):[^@/?#]*@/i, '$1:***@')
}

/** A name the sandbox and SQL can use: letters, digits and `_`, not starting with a digit. */
export function identifierOf(text: string): string {
  const cleaned = text.replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '')
  if (!cleaned) return 'data'
  return /^[0-9]/.test(cleaned) ? `t_${cleaned}` : cleaned
}

/** A file's base name without its extensions: `sales` for `/data/sales.csv.gz`. */
function stem(path: string): string {
  return basename(path).replace(/(\.[A-Za-z0-9]+)+$/, '') || basename(path)
}

/** The SQL table a data file is: `sales` for `sales.csv`, as `--data` names it. */
export function tableNameOf(path: string): string {
  return identifierOf(stem(path))
}

/** Over this, a data file stays on the host and only sql() reads it. @default 1 GiB (ANALYST_SQL_ONLY_BYTES) */
export function sqlOnlyBytes(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env.ANALYST_SQL_ONLY_BYTES)
  return Number.isFinite(value) && value > 0 ? value : 1024 ** 3
}

/**
 * Parses one `--data` source. `cwd` resolves relative paths. The password comes from the URL, else
 * from PGPASSWORD (PostgreSQL) or MYSQL_PWD (MySQL, MariaDB), as their own tools take it.
 */
export function parseSource(
  argument: string,
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): SourceSpec {
  const named = NAME_PATTERN.exec(argument)
  const given = named?.[1]
  const raw = expandEnv(named?.[2] ?? argument, env).trim()
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(raw)?.[1]?.toLowerCase()

  if (scheme === 'postgres' || scheme === 'postgresql' || scheme === 'mysql' || scheme === 'mariadb') {
    const kind: SourceKind = scheme.startsWith('postgres') ? 'postgres' : 'mysql'
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      throw new InvalidArgumentError(`Not a valid database URL: ${redact(raw)}`, {
        hint:
          kind === 'postgres'
            ? // biome-ignore lint/suspicious/noTemplateCurlyInString: ${VAR} is the syntax of source URLs
              'Write it as postgres://USER@HOST:PORT/DATABASE (the password in PGPASSWORD or ${VAR}).'
            : // biome-ignore lint/suspicious/noTemplateCurlyInString: ${VAR} is the syntax of source URLs
              'Write it as mysql://USER@HOST:PORT/DATABASE (the password in MYSQL_PWD or ${VAR}).',
      })
    }
    if (!url.hostname && !url.searchParams.get('host') && !url.searchParams.get('socket')) {
      throw new InvalidArgumentError(`The database URL names no host: ${redact(raw)}`, {
        hint: `Write it as ${scheme}://USER@HOST:PORT/DATABASE.`,
      })
    }
    const database = decodeURIComponent(url.pathname.replace(/^\//, ''))
    if (kind === 'mysql' && !database) {
      throw new InvalidArgumentError(`The MySQL URL names no database: ${redact(raw)}`, {
        hint: 'Add the database after the host: mysql://USER@HOST:PORT/DATABASE.',
      })
    }
    const password =
      (url.password ? decodeURIComponent(url.password) : undefined) ??
      (kind === 'postgres' ? env.PGPASSWORD : env.MYSQL_PWD) ??
      undefined
    url.password = ''
    const user = decodeURIComponent(url.username)
    return {
      name: given ?? identifierOf(database || user || kind),
      kind,
      location: url.toString(),
      ...(password ? { password } : {}),
    }
  }

  if (scheme === 'sqlite' || scheme === 'duckdb') {
    // sqlite:path.db, sqlite:///abs/path.db (the URL form): the path is what follows the slashes' pair.
    let rest = raw.slice(scheme.length + 1)
    if (rest.startsWith('//')) rest = rest.slice(2)
    if (!rest || rest === ':memory:') {
      throw new InvalidArgumentError(`The ${scheme} source names no file: ${raw}`, {
        hint: `Write it as ${scheme}:PATH (relative) or ${scheme}:///ABSOLUTE/PATH.`,
      })
    }
    const path = resolve(cwd, decodeURIComponent(rest))
    return { name: given ?? identifierOf(stem(path)), kind: scheme, location: path }
  }

  if (scheme && scheme.length > 1 && raw.includes('://')) {
    throw new InvalidArgumentError(
      `Analyst does not know databases of the kind "${scheme}": ${redact(raw)}`,
      {
        hint: 'Give postgres://…, mysql://…, mariadb://…, sqlite:PATH, duckdb:PATH or a data file.',
      },
    )
  }
  if (!isQueryableFile(raw)) {
    throw new InvalidArgumentError(`Not a data source: ${raw}`, {
      hint: 'Give a database URL (postgres://…, mysql://…, sqlite:PATH, duckdb:PATH) or a CSV, TSV, Parquet or NDJSON file.',
    })
  }
  const path = resolve(cwd, raw)
  return { name: given ?? tableNameOf(path), kind: 'file', location: path }
}

/** The source as it may be shown: its URL without a password, or its path. */
export function describeLocation(spec: SourceSpec): string {
  return spec.kind === 'postgres' || spec.kind === 'mysql' ? redact(spec.location) : spec.location
}
