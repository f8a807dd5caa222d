/**
 * MySQL and MariaDB statements checked with node-sql-parser before they are sent: one statement, a
 * query (SELECT, WITH, SHOW, DESCRIBE, EXPLAIN), no INTO (OUTFILE, DUMPFILE, variables), no
 * LOAD_FILE() or other reach into the server's files, no reading of the accounts' password hashes
 * (mysql.user, mysql.global_priv), and no executable comments (`/*! … *\/`),
 * which the server runs but a parser reads as comments.
 * @module
 */
import sqlParser from 'node-sql-parser'
import { notOneStatement, ONLY_QUERIES, refuse, unparsable } from './refuse.js'

const parser = new sqlParser.Parser()

const REFUSED_FUNCTIONS: Record<string, string> = {
  load_file: "LOAD_FILE() reads the server's files",
  sys_exec: 'sys_exec() runs programs on the server',
  sys_eval: 'sys_eval() runs programs on the server',
  get_lock: 'GET_LOCK() acts on the server, not on data',
  release_lock: 'RELEASE_LOCK() acts on the server, not on data',
  release_all_locks: 'RELEASE_ALL_LOCKS() acts on the server, not on data',
}

/** Tables of the `mysql` schema that hold the accounts' password hashes. */
const SECRET_TABLES = new Set(['user', 'global_priv'])

function walk(node: unknown, visit: (value: Record<string, unknown>) => void): void {
  if (Array.isArray(node)) {
    for (const item of node) walk(item, visit)
    return
  }
  if (node === null || typeof node !== 'object') return
  visit(node as Record<string, unknown>)
  for (const value of Object.values(node)) walk(value, visit)
}

function functionName(node: Record<string, unknown>): string {
  const name = node.name as { name?: { value?: string }[] } | string | undefined
  if (typeof name === 'string') return name.toLowerCase()
  return (name?.name?.at(-1)?.value ?? '').toLowerCase()
}

/** Throws the refusal when the statement may not run; `dialect` is the server's. */
export function checkMysql(query: string, dialect: 'MySQL' | 'MariaDB' = 'MariaDB'): void {
  if (/\/\*[M]?!/.test(query)) {
    throw refuse(
      'executable comments (/*! … */) run SQL past these checks',
      'Write the SQL without /*! … */ comments.',
    )
  }
  // What the statement is, from its first word: a clear refusal even where the parser cannot follow.
  const first = /^(?:\s|--[^\n]*\n|#[^\n]*\n|\/\*[\s\S]*?\*\/)*([A-Za-z]+)/.exec(query)?.[1]?.toUpperCase()
  if (
    first &&
    !['SELECT', 'WITH', 'SHOW', 'DESC', 'DESCRIBE', 'EXPLAIN', 'VALUES', 'TABLE'].includes(first)
  ) {
    if (first === 'LOAD') {
      throw refuse(
        "LOAD DATA reads the server's or the client's files",
        'Query the tables that hold the data.',
      )
    }
    throw refuse(`${first} is not a query`, ONLY_QUERIES)
  }
  let ast: unknown
  try {
    ast = parser.astify(query, { database: dialect })
  } catch (error) {
    throw unparsable((error as Error).message.split('\n')[0] ?? String(error))
  }
  const statements = (Array.isArray(ast) ? ast : [ast]).filter(Boolean) as Record<string, unknown>[]
  if (statements.length !== 1) throw notOneStatement(statements.length)
  const statement = statements[0] as Record<string, unknown>
  const type = String(statement.type)
  if (type === 'load_data') {
    throw refuse("LOAD DATA reads the server's or the client's files", 'Query the tables that hold the data.')
  }
  const queryType =
    type === 'explain' ? String((statement.expr as { type?: string } | undefined)?.type) : type
  if (!['select', 'show', 'desc', 'describe'].includes(queryType)) {
    throw refuse(`${queryType.toUpperCase()} is not a query`, ONLY_QUERIES)
  }
  walk(statement, (node) => {
    const into = node.into as { keyword?: string; type?: string; expr?: unknown } | undefined
    if (into && typeof into === 'object' && (into.keyword || into.type || into.expr)) {
      const where = into.keyword ? `INTO ${into.keyword.toUpperCase()}` : 'SELECT … INTO'
      throw refuse(
        `${where} writes files or variables on the server`,
        'Select the rows; the host streams them back.',
      )
    }
    if (node.type === 'function' || node.type === 'aggr_func') {
      const rule = REFUSED_FUNCTIONS[functionName(node)]
      if (rule) throw refuse(rule, 'Query the tables; files and programs on the server are out of reach.')
    }
    if (typeof node.table === 'string' && SECRET_TABLES.has(node.table.toLowerCase())) {
      const db = typeof node.db === 'string' ? node.db.toLowerCase() : null
      if (db === 'mysql' || (db === null && node.table.toLowerCase() === 'global_priv')) {
        throw refuse(
          `mysql.${node.table} holds the accounts' password hashes`,
          "Query the tables that hold the data; the server's accounts are out of reach.",
        )
      }
    }
    if (['insert', 'update', 'delete', 'replace'].includes(String(node.type))) {
      throw refuse(`${String(node.type).toUpperCase()} changes data`, ONLY_QUERIES)
    }
  })
}
