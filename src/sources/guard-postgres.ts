/**
 * PostgreSQL statements checked with PostgreSQL's own parser (libpg-query) before they are sent:
 * one statement, a query (SELECT, VALUES, EXPLAIN of one, SHOW), no SELECT INTO, no data-changing
 * CTE, none of the functions that reach the server's files, programs, large objects, other
 * servers or settings, and none of the catalog views that show its files or password hashes.
 * @module
 */
import { loadModule, parseSync } from 'libpg-query'
import { notOneStatement, ONLY_QUERIES, refuse, unparsable } from './refuse.js'

let loaded: Promise<void> | undefined

/** Functions refused whatever the role may do: the rule each breaks. */
function refusedFunction(name: string): string | undefined {
  if (
    /^pg_(read_file|read_binary_file|ls_[a-z_]+|stat_file|file_write|file_rename|file_unlink|file_sync|logdir_ls)$/.test(
      name,
    )
  )
    return `${name}() reads or changes the server's files`
  if (/^(lo_[a-z_]+|loread|lowrite)$/.test(name))
    return `${name}() reaches the server's large objects and files`
  if (name.startsWith('dblink')) return `${name}() connects to other servers`
  if (
    /^(query_to_xml|query_to_xml_and_xmlschema|query_to_xmlschema|cursor_to_xml|cursor_to_xmlschema)$/.test(
      name,
    )
  )
    return `${name}() runs SQL from a string, past these checks`
  if (name === 'set_config') return 'set_config() changes settings such as the statement timeout'
  if (
    /^pg_(terminate_backend|cancel_backend|reload_conf|rotate_logfile|promote|switch_wal|create_restore_point|advisory_[a-z_]+|try_advisory_[a-z_]+)$/.test(
      name,
    )
  )
    return `${name}() acts on the server, not on data`
  return undefined
}

/** Catalog views (and the functions behind them) that show the server's files or its secrets. */
const REFUSED_RELATIONS: Record<string, string> = {
  pg_file_settings: "pg_file_settings shows the server's configuration files",
  pg_show_all_file_settings: "pg_show_all_file_settings() shows the server's configuration files",
  pg_hba_file_rules: "pg_hba_file_rules shows the server's pg_hba.conf",
  pg_ident_file_mappings: "pg_ident_file_mappings shows the server's pg_ident.conf",
  pg_authid: "pg_authid holds the roles' password hashes",
  pg_shadow: "pg_shadow holds the roles' password hashes",
  pg_user_mapping: "pg_user_mapping holds other servers' passwords",
  pg_user_mappings: "pg_user_mappings holds other servers' passwords",
}

const CHANGING = new Set(['InsertStmt', 'UpdateStmt', 'DeleteStmt', 'MergeStmt'])

/** Walks a parse tree: every node's type (the single key of an object) and every function call. */
function walk(node: unknown, visit: (type: string, value: Record<string, unknown>) => void): void {
  if (Array.isArray(node)) {
    for (const item of node) walk(item, visit)
    return
  }
  if (node === null || typeof node !== 'object') return
  for (const [key, value] of Object.entries(node)) {
    if (/^[A-Z]/.test(key) && value && typeof value === 'object' && !Array.isArray(value)) {
      visit(key, value as Record<string, unknown>)
    }
    walk(value, visit)
  }
}

function functionName(call: Record<string, unknown>): string {
  const parts = (call.funcname as { String?: { sval?: string } }[] | undefined) ?? []
  return (parts.at(-1)?.String?.sval ?? '').toLowerCase()
}

/** A statement that may run. */
export interface CheckedStatement {
  /** The statement alone: without a `;` or a comment after it. */
  text: string
  /** A SELECT, VALUES or TABLE (not EXPLAIN, not SHOW): it can be the query of a COPY. */
  selects: boolean
}

/** The statement, checked; throws the refusal when it may not run. */
export async function checkPostgres(query: string): Promise<CheckedStatement> {
  // PostgreSQL ends a statement's text at a NUL: what the server read would not be what was checked.
  if (query.includes('\0'))
    throw unparsable('it holds a NUL character (\\0), which PostgreSQL cannot take; remove it')
  loaded ??= loadModule()
  await loaded
  let tree: {
    stmts?: { stmt: Record<string, unknown>; stmt_location?: number | null; stmt_len?: number | null }[]
  }
  try {
    tree = parseSync(query) as typeof tree
  } catch (error) {
    throw unparsable((error as Error).message)
  }
  const statements = tree.stmts ?? []
  if (statements.length !== 1) throw notOneStatement(statements.length)
  const statement = statements[0]?.stmt ?? {}
  // Offsets in UTF-8 bytes; no length means to the end.
  const from = statements[0]?.stmt_location ?? 0
  const length = statements[0]?.stmt_len ?? 0
  const [type, body] = Object.entries(statement)[0] ?? []
  const top = body as Record<string, unknown> | undefined
  const explained = type === 'ExplainStmt' ? (top?.query as Record<string, unknown> | undefined) : undefined
  const queryType = explained ? Object.keys(explained)[0] : type
  if (type === 'CopyStmt') {
    throw refuse(
      'COPY reads and writes files and programs on the server',
      'Select the rows with SELECT; the host streams them back.',
    )
  }
  if (queryType !== 'SelectStmt' && type !== 'VariableShowStmt') {
    throw refuse(`${(queryType ?? 'this').replace(/Stmt$/, '').toUpperCase()} is not a query`, ONLY_QUERIES)
  }
  walk(statement, (nodeType, value) => {
    if (nodeType === 'SelectStmt' && value.intoClause) {
      throw refuse('SELECT INTO creates a table', 'Select the rows and keep them in pandas instead.')
    }
    if (CHANGING.has(nodeType)) {
      throw refuse(`${nodeType.replace(/Stmt$/, '').toUpperCase()} changes data`, ONLY_QUERIES)
    }
    if (nodeType === 'FuncCall') {
      const name = functionName(value)
      const rule = refusedFunction(name) ?? REFUSED_RELATIONS[name]
      if (rule) throw refuse(rule, 'Query the tables; files and programs on the server are out of reach.')
    }
    if (nodeType === 'RangeVar') {
      const rule = REFUSED_RELATIONS[String(value.relname ?? '')]
      if (rule)
        throw refuse(
          rule,
          "Query the tables that hold the data; the server's files and secrets are out of reach.",
        )
    }
  })
  const bytes = Buffer.from(query)
  return {
    text: bytes.subarray(from, length ? from + length : bytes.length).toString(),
    selects: type === 'SelectStmt',
  }
}
