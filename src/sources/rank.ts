/**
 * Which tables a question is most likely about, for a schema too large to describe whole: the
 * words of the question against each table's name (most), its columns' names and its comments;
 * then the tables linked by a foreign key to one that matched, since the answer may need the join.
 * Ties go to the tables with more links, then more rows.
 * @module
 */
import type { CatalogTable } from './source.js'

const STOP = new Set(
  'a an and are as at be by did do does for from had has have how in is it its many me much of on or per show tell than that the their them there these this to was were what when where which who why with would each all any most more less top list give find'.split(
    ' ',
  ),
)

/** The words of a text, lower case, split at case changes and underscores, plurals folded. */
export function words(text: string): Set<string> {
  const out = new Set<string>()
  const spaced = text.replace(/([a-z0-9])([A-Z])/g, '$1 $2')
  for (const raw of spaced.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if ((raw.length < 2 && !/\d/.test(raw)) || STOP.has(raw)) continue
    out.add(stem(raw))
  }
  return out
}

/** A plural folded to its singular, roughly: orders → order, categories → category, boxes → box. */
function stem(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`
  if (word.length > 4 && /(ss|x|ch|sh)es$/.test(word)) return word.slice(0, -2)
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1)
  return word
}

export interface TableScore {
  /** How well the table matches the question, with what its links bring. */
  score: number
  /** Tables it is joined to by a foreign key, either way. */
  links: number
}

/** Each table's score for this question. */
export function scoreTables<T extends CatalogTable>(tables: readonly T[], question = ''): Map<T, TableScore> {
  const asked = words(question)
  const own = new Map<T, number>()
  const links = new Map<T, Set<T>>()
  const byName = new Map(tables.map((table) => [table.name, table]))
  const link = (a: T, b: T) => {
    if (!links.has(a)) links.set(a, new Set())
    links.get(a)?.add(b)
  }
  for (const table of tables) {
    let points = 0
    for (const word of words(table.name)) if (asked.has(word)) points += 3
    const columnWords = new Set(table.columns.flatMap((column) => [...words(column.name)]))
    for (const word of columnWords) if (asked.has(word)) points += 1
    const comments = [table.comment ?? '', ...table.columns.map((column) => column.comment ?? '')]
    const commentWords = new Set(comments.flatMap((text) => [...words(text)]))
    for (const word of commentWords) if (asked.has(word)) points += 0.5
    own.set(table, points)
    for (const key of table.foreignKeys ?? []) {
      const other = byName.get(key.references)
      if (!other || other === table) continue
      link(table, other)
      link(other, table)
    }
  }
  // A table joined to a matching one comes along, ahead of tables that match nothing.
  const scores = new Map<T, TableScore>()
  for (const table of tables) {
    let best = 0
    for (const other of links.get(table) ?? []) best = Math.max(best, own.get(other) ?? 0)
    scores.set(table, {
      score: (own.get(table) ?? 0) + Math.min(best, 3) / 2,
      links: links.get(table)?.size ?? 0,
    })
  }
  return scores
}

/** Orders tables by their scores: the most relevant first. */
export function byScore<T extends CatalogTable>(scores: Map<T, TableScore>): (a: T, b: T) => number {
  return (a, b) =>
    (scores.get(b)?.score ?? 0) - (scores.get(a)?.score ?? 0) ||
    (scores.get(b)?.links ?? 0) - (scores.get(a)?.links ?? 0) ||
    (b.rowEstimate ?? 0) - (a.rowEstimate ?? 0) ||
    a.name.localeCompare(b.name)
}

/** The tables in the order to describe them for this question (the most relevant first). */
export function rankTables<T extends CatalogTable>(tables: readonly T[], question = ''): T[] {
  return [...tables].sort(byScore(scoreTables(tables, question)))
}
