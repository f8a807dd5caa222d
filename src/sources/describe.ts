/**
 * What the model is told about the sources: each source's tables (one shape for every kind,
 * CatalogTable) as text, within a budget. When the whole schema fits, all of it; otherwise the
 * tables that best match the question, described in full (with sample values), and the rest by
 * name, with the line that says `describe_table(name)` gives any of them. The catalog is read in a
 * few bulk queries; only the tables described in full are sampled.
 * @module
 */
import { distance } from 'fastest-levenshtein'
import { NotFoundError } from '../errors.js'
import { formatTable } from './format.js'
import { byScore, scoreTables, type TableScore } from './rank.js'
import { addSamples } from './samples.js'
import type { CatalogTable, Source } from './source.js'
import type { SourceKind } from './spec.js'

/** One connection's worth of sources: a database, or all the data files (one DuckDB). */
export interface SourceGroup {
  /** The names `sql(source=…)` takes: the database's, or one per data file. */
  names: string[]
  kind: SourceKind
  source: Source
}

/** A group with its tables. */
export interface SourceDescription {
  group: SourceGroup
  tables: CatalogTable[]
}

/** How long sampling may take, for the prompt (all groups) and for one table. */
export const SAMPLE_TIMEOUT_MS = { prompt: 5_000, table: 10_000 }
/** At most this many tables are sampled for one prompt, however large the budget. */
const MAX_SAMPLED = 60
/** What samples add to a column's line, before they are read: to choose the tables that fit. */
const SAMPLE_ALLOWANCE = 30

const KIND_NAMES: Record<SourceKind, string> = {
  postgres: 'PostgreSQL',
  mysql: 'MySQL/MariaDB',
  sqlite: 'SQLite',
  duckdb: 'DuckDB',
  file: 'data files queried in place by DuckDB',
}

export function groupHeading(group: SourceGroup, tables: number): string {
  const what = `${tables} table${tables === 1 ? '' : 's'}`
  if (group.kind === 'file') {
    const names = group.names.map((name) => `"${name}"`).join(', ')
    return `Source${group.names.length > 1 ? 's' : ''} ${names} (${KIND_NAMES.file}; tables named after the files, which can be joined), ${what}:`
  }
  return `Source "${group.names[0]}" (${KIND_NAMES[group.kind]}), ${what}:`
}

/** Every table sampled (views too for data files), in place: what `analyst profile` shows. */
export async function sampleAll(described: SourceDescription[], signal?: AbortSignal): Promise<void> {
  for (const { group, tables } of described) {
    await addSamples(group.source, tables, {
      timeoutMs: SAMPLE_TIMEOUT_MS.prompt,
      views: group.kind === 'file',
      signal,
    })
  }
}

/** Every table in full. */
export function formatInFull(described: SourceDescription[]): string {
  return described
    .map(({ group, tables }) => [groupHeading(group, tables.length), ...tables.map(formatTable)].join('\n'))
    .join('\n\n')
}

interface Entry {
  at: SourceDescription
  table: CatalogTable
}

/**
 * The sources' description within `budgetChars`: all of it when it fits, else the tables that
 * best match the question in full and the others by name.
 */
export async function describeWithinBudget(
  described: SourceDescription[],
  options: { budgetChars: number; question?: string; signal?: AbortSignal },
): Promise<string> {
  const { budgetChars, question } = options
  // Scores per source (its own foreign keys), one order across them all.
  const scores = new Map<CatalogTable, TableScore>()
  for (const { tables } of described)
    for (const [table, score] of scoreTables(tables, question)) scores.set(table, score)
  const order = byScore(scores)
  const entries: Entry[] = described.flatMap((at) => at.tables.map((table) => ({ at, table })))
  entries.sort((a, b) => order(a.table, b.table))

  // Which tables can be described in full, judged before sampling; then sampled, then fitted.
  const estimate = (table: CatalogTable) =>
    formatTable(table).length + table.columns.length * SAMPLE_ALLOWANCE
  const chosen: Entry[] = []
  let used = 0
  for (const entry of entries) {
    if (chosen.length >= MAX_SAMPLED) break
    const size = estimate(entry.table)
    if (used + size > budgetChars) continue
    chosen.push(entry)
    used += size
  }
  for (const at of described) {
    const tables = chosen.filter((entry) => entry.at === at).map((entry) => entry.table)
    await addSamples(at.group.source, tables, {
      timeoutMs: SAMPLE_TIMEOUT_MS.prompt,
      views: at.group.kind === 'file',
      signal: options.signal,
    })
  }
  const full = new Set<CatalogTable>()
  const texts = new Map<CatalogTable, string>()
  const fits = entries.reduce((sum, entry) => sum + formatTable(entry.table).length + 1, 0) <= budgetChars
  used = 0
  for (const entry of fits ? entries : chosen) {
    const text = formatTable(entry.table)
    if (!fits && used + text.length + 1 > budgetChars) continue
    full.add(entry.table)
    texts.set(entry.table, text)
    used += text.length + 1
  }

  const parts: string[] = []
  const rest = entries.length - full.size
  if (rest > 0) {
    parts.push(
      `The schema is larger than this prompt: ${full.size} table${full.size === 1 ? '' : 's'} that best match the question ${full.size === 1 ? 'is' : 'are'} described in full, ${rest} other${rest === 1 ? '' : 's'} by name only. describe_table('name') gives any table's columns, keys and samples.`,
    )
  }
  // Names of the rest take what budget is left, and at least a line.
  let namesLeft = Math.max(400, budgetChars - used)
  for (const at of described) {
    const lines = [groupHeading(at.group, at.tables.length)]
    for (const table of at.tables) {
      const text = texts.get(table)
      if (text) lines.push(text)
    }
    const others = at.tables.filter((table) => !full.has(table)).sort(order)
    if (others.length > 0) {
      const names: string[] = []
      for (const table of others) {
        if (namesLeft - table.name.length - 2 < 0) break
        names.push(table.name)
        namesLeft -= table.name.length + 2
      }
      const more = others.length - names.length
      lines.push(
        `  By name only (describe_table('name'${described.length > 1 ? `, source='${at.group.names[0]}'` : ''}) describes one): ${names.join(', ')}${more > 0 ? `${names.length > 0 ? ', ' : ''}… and ${more} more` : ''}`,
      )
    }
    parts.push(lines.join('\n'))
  }
  return parts.join('\n\n')
}

/** The table a name means: exactly, else ignoring case, else by its name without a schema. */
export function findTable(tables: readonly CatalogTable[], name: string): CatalogTable | undefined {
  const wanted = name.trim().replace(/^["`[]|["`\]]$/g, '')
  const lower = wanted.toLowerCase()
  const unqualified = (table: CatalogTable) => table.name.split('.').pop()?.toLowerCase()
  const exact = tables.find((table) => table.name === wanted)
  if (exact) return exact
  const folded = tables.filter((table) => table.name.toLowerCase() === lower)
  if (folded.length === 1) return folded[0]
  const bare = tables.filter((table) => unqualified(table) === lower)
  return bare.length === 1 ? bare[0] : undefined
}

/** The names closest to one that is not there, for the error that says so. */
export function closeNames(name: string, names: readonly string[], count = 5): string[] {
  const lower = name.toLowerCase()
  return names
    .map((candidate) => {
      const other = candidate.toLowerCase()
      const contains = other.includes(lower) || lower.includes(other)
      return { candidate, cost: contains ? 0 : distance(lower, other) / Math.max(lower.length, other.length) }
    })
    .filter((scored) => scored.cost <= 0.5)
    .sort((a, b) => a.cost - b.cost || a.candidate.localeCompare(b.candidate))
    .slice(0, count)
    .map((scored) => scored.candidate)
}

/** One table in full, for describe_table(): it is sampled even when a view. */
export async function describeTable(
  described: SourceDescription[],
  name: string,
  signal?: AbortSignal,
): Promise<string> {
  for (const { group, tables } of described) {
    const table = findTable(tables, name)
    if (!table) continue
    await addSamples(group.source, [table], { timeoutMs: SAMPLE_TIMEOUT_MS.table, views: true, signal })
    return formatTable(table)
  }
  const names = described.flatMap(({ tables }) => tables.map((table) => table.name))
  const close = closeNames(name, names)
  throw new NotFoundError(`There is no table named "${name}"`, {
    hint:
      close.length > 0
        ? `Did you mean ${close.map((c) => `'${c}'`).join(', ')}?`
        : names.length > 0
          ? `The tables are: ${names.slice(0, 30).join(', ')}${names.length > 30 ? `, … (${names.length} in all)` : ''}.`
          : 'This source has no tables the role may read.',
  })
}
