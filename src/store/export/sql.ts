/**
 * What an export needs to run `sql()` outside the sandbox: the names of the sources the session
 * queried, and a small `sql()` in Python that reaches each one from the reader's machine by a URL
 * in ANALYST_SOURCE_<NAME>. The export never holds a URL or a password: the session's sources
 * were the server's, and the reader brings their own.
 * @module
 */
import type { SessionHistory, StoredQuery } from '../types.js'

/** A query in one line, as exports and `analyst show` list a step's queries: where, how many rows, how long. */
export function queryLine(query: StoredQuery): string {
  const outcome = query.error
    ? `failed: ${query.error}`
    : `${query.rows} row${query.rows === 1 ? '' : 's'} in ${Math.round(query.durationMs)} ms${query.truncated ? ` (stopped at the ${query.truncated.by} cap)` : ''}`
  return `sql() on ${query.source}: ${outcome}`
}

/** The sources a session's code queried: those it was given by name, and any its steps' queries name. */
export function sessionSources(history: SessionHistory): string[] {
  const named = history.session.sources ?? []
  const queried = history.runs.flatMap((run) => run.steps.flatMap((step) => step.queries ?? []))
  return [...new Set([...named, ...queried.map((query) => query.source)])]
}

/** The variable that holds a source's URL when an export runs. */
export function sourceVariable(name: string): string {
  return `ANALYST_SOURCE_${name.toUpperCase()}`
}

/** Lines that say where each source's URL goes. */
export function sourcesNote(names: string[]): string[] {
  return [
    "The code queries these sources with sql(); set each one's URL where it runs:",
    ...names.map(
      (name) =>
        `  ${sourceVariable(name)}=postgres://USER@HOST/DB (mysql://…, sqlite:FILE, duckdb:FILE, or a data file)`,
    ),
  ]
}

/**
 * The Python `sql()` of an export: the same call as in the sandbox, run here with pandas and the
 * usual drivers (sqlite3; SQLAlchemy with psycopg2 or PyMySQL; duckdb for DuckDB and data files).
 * It only reads: each query runs in a transaction that is rolled back.
 */
export function sqlFunction(names: string[]): string {
  const only = names.length === 1 ? JSON.stringify(names[0]) : 'None'
  return `import os


def sql(query, source=None, params=None):
    """Runs one query on a source of the session and returns a DataFrame, as sql() did in Analyst."""
    import pandas as pd

    name = source or ${only}
    if name is None:
        raise ValueError('Say which source: sql(query, source=...) with one of ${names.join(', ')}')
    variable = 'ANALYST_SOURCE_' + name.upper()
    url = os.environ.get(variable)
    if not url:
        raise RuntimeError(f'Set {variable} to the URL of the source {name!r}: postgres://USER@HOST/DB, mysql://..., sqlite:FILE, duckdb:FILE or a data file')
    if url.startswith('sqlite:'):
        import sqlite3

        connection = sqlite3.connect(f'file:{url[len("sqlite:"):]}?mode=ro', uri=True)
        try:
            return pd.read_sql_query(query, connection, params=params)
        finally:
            connection.close()
    if '://' not in url:
        import duckdb

        if url.startswith('duckdb:'):
            connection = duckdb.connect(url[len('duckdb:'):], read_only=True)
        else:
            connection = duckdb.connect()
            connection.execute(f'CREATE VIEW "{name}" AS SELECT * FROM ' + "'" + url.replace("'", "''") + "'")
        try:
            return connection.execute(query, params or []).df()
        finally:
            connection.close()
    from sqlalchemy import create_engine

    url = url.replace('postgres://', 'postgresql+psycopg2://', 1).replace('mysql://', 'mysql+pymysql://', 1).replace('mariadb://', 'mysql+pymysql://', 1)
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            raw = connection.connection
            cursor = raw.cursor()
            try:
                cursor.execute(query, params)
                columns = [column[0] for column in cursor.description or []]
                return pd.DataFrame.from_records(cursor.fetchall(), columns=columns)
            finally:
                cursor.close()
                raw.rollback()
    finally:
        engine.dispose()
`
}
