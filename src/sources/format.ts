/**
 * A table's description as text, the same in the prompt, in `describe_table()` and in
 * `analyst profile`: its kind, estimated rows and comment, then one line per column with its type,
 * keys, a few sample values and its comment.
 * @module
 */
import type { CatalogColumn, CatalogTable } from './source.js'

const number = new Intl.NumberFormat('en-US')

/** A sample as the model should read it: text quoted, numbers and dates as they are. */
function sample(value: string): string {
  const cut = value.length >= 40 ? `${value.slice(0, 37)}…` : value
  return /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(cut) || /^\d{4}-\d\d-\d\d/.test(cut)
    ? cut
    : JSON.stringify(cut)
}

function columnLine(table: CatalogTable, column: CatalogColumn): string {
  const notes: string[] = [column.type]
  if (table.primaryKey?.length === 1 && table.primaryKey[0] === column.name) notes.push('primary key')
  else if (column.nullable === false) notes.push('not null')
  for (const key of table.foreignKeys ?? []) {
    if (key.columns.length === 1 && key.columns[0] === column.name)
      notes.push(`→ ${key.references}.${key.referencedColumns[0]}`)
  }
  let line = `  - ${column.name}: ${notes.join(', ')}`
  if (column.samples?.length) line += `; e.g. ${column.samples.map(sample).join(', ')}`
  if (column.comment) line += ` -- ${oneLine(column.comment)}`
  return line
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim()

/** The first line of a table: name, kind, rows, comment. */
export function tableHeading(table: CatalogTable): string {
  const facts: string[] = [table.kind]
  if (table.rowEstimate !== undefined) facts.push(`~${number.format(table.rowEstimate)} rows`)
  return `${table.name} (${facts.join(', ')})${table.comment ? `: ${oneLine(table.comment)}` : ''}`
}

/** A table in full. */
export function formatTable(table: CatalogTable): string {
  const lines = [tableHeading(table)]
  if ((table.primaryKey?.length ?? 0) > 1) lines.push(`  primary key (${table.primaryKey?.join(', ')})`)
  for (const key of table.foreignKeys ?? []) {
    if (key.columns.length > 1)
      lines.push(
        `  foreign key (${key.columns.join(', ')}) → ${key.references} (${key.referencedColumns.join(', ')})`,
      )
  }
  for (const column of table.columns) lines.push(columnLine(table, column))
  return lines.join('\n')
}
