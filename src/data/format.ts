/**
 * Profiles as prompt text: one section per file within a token budget, then the columns files share
 * (join hints). A section shrinks by whole lines, never mid-line: fewer sample rows, then short column
 * lines, then a summary of the columns that do not fit (a table with thousands of columns).
 * @module
 */
import { py, thousands } from './python-literal.js'
import { quoteName, type ReadLanguage, rReadCall, rType, rWarning, rWorkbookIntro } from './r-text.js'
import type { Cell, ColumnProfile, DatasetProfile, SheetProfile } from './types.js'

export interface FormatOptions {
  /** Budget per file, in tokens (estimated as characters / 4). @default 1500 */
  tokensPerFile?: number
  /** The language the model reads the files in: its read calls, types and missing values. @default python */
  language?: ReadLanguage
}

export const DEFAULT_TOKENS_PER_FILE = 1500
const CHARS_PER_TOKEN = 4
const CELL_CHARS = 24
/** Longer column names are cut in the prompt (with …); the model can list them in full with df.columns. */
const NAME_CHARS = 60
const MAX_WARNINGS = 12

/** A cheap token estimate: about four characters per token for English and code. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN)
}

function clip(text: string, max = CELL_CHARS): string {
  const flat = text.replace(/\s+/g, ' ')
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

function number(value: number): string {
  if (!Number.isFinite(value)) return String(value)
  const abs = Math.abs(value)
  if (abs >= 1e15 || (abs > 0 && abs < 1e-4)) return value.toExponential(3)
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(8)))
}

/** '2024-01-05T00:00:00' → '2024-01-05'; '2024-01-05T10:30:00' → '2024-01-05 10:30:00'. */
function when(text: string): string {
  return text.replace(/T00:00:00(?:\.0+)?$/, '').replace(/^(\d{4}-\d{2}-\d{2})T/, '$1 ')
}

function cellText(value: Cell, dtype?: string, language: ReadLanguage = 'python'): string {
  const r = language === 'r'
  if (value === null) return r ? 'NA' : dtype?.startsWith('datetime') ? 'NaT' : 'NaN'
  if (typeof value === 'string' && dtype?.startsWith('datetime')) return when(value)
  if (typeof value === 'number') return number(value)
  if (typeof value === 'boolean') return r ? (value ? 'TRUE' : 'FALSE') : value ? 'True' : 'False'
  return py(clip(value))
}

/** The column's type as the language's reader gives it. */
function typeName(dtype: string, language: ReadLanguage): string {
  return language === 'r' ? rType(dtype) : dtype
}

function count(n: number, estimated?: boolean): string {
  return `${estimated ? '~' : ''}${thousands(n)}`
}

/** `'name' dtype, N nulls: stats; e.g. …` in one line. */
export function columnLine(
  column: ColumnProfile,
  rows: number,
  sampled = false,
  language: ReadLanguage = 'python',
): string {
  const parts: string[] = []
  if (column.nulls > 0)
    parts.push(
      `${count(column.nulls)} null${column.nulls === 1 ? '' : 's'}${rows > 0 && column.nulls === rows ? ' (all)' : ''}`,
    )
  const stats: string[] = []
  if (column.dates) {
    stats.push(
      `${column.dates.asText ? 'dates as text ' : ''}${when(column.dates.min)} … ${when(column.dates.max)}`,
    )
  } else if (column.min !== undefined && column.max !== undefined) {
    stats.push(
      `${number(column.min)} … ${number(column.max)}${column.mean !== undefined ? `, mean ${number(column.mean)}` : ''}`,
    )
  }
  const distinct = `${count(column.distinct)} distinct${sampled ? ' in the sample' : column.distinctEstimated ? ' or more' : ''}`
  if (column.top && !column.dates) {
    const unique = !sampled && column.distinct === rows - column.nulls && rows > 1
    if (unique) stats.push(`${distinct} (all different)`)
    else
      stats.push(
        `${distinct}; top ${column.top
          .slice(0, 3)
          .map((t) => `${py(clip(t.value, 20))} ${count(t.count)}`)
          .join(', ')}`,
      )
  } else if (column.min !== undefined && column.distinct <= 20) stats.push(distinct)
  // Text shows its top values and dates their range; samples add nothing there.
  const samples =
    (column.top && !column.dates) || (column.dates && !column.dates.asText) || column.samples.length === 0
      ? ''
      : `; e.g. ${column.samples.map((v) => cellText(v, column.dtype, language)).join(', ')}`
  const head = `- ${py(clip(column.name, NAME_CHARS))} ${typeName(column.dtype, language)}${parts.length > 0 ? `, ${parts.join(', ')}` : ''}`
  return `${head}${stats.length > 0 ? `: ${stats.join('; ')}` : ''}${samples}`
}

function shortColumn(column: ColumnProfile, language: ReadLanguage): string {
  return `${py(clip(column.name, NAME_CHARS))} ${typeName(column.dtype, language)}`
}

function sampleLines(
  columns: ColumnProfile[],
  rows: Record<string, Cell>[],
  n: number,
  language: ReadLanguage,
): string[] {
  if (n === 0 || rows.length === 0 || columns.length === 0) return []
  const shown = columns.slice(0, 12)
  const more = columns.length > shown.length ? ` | … (${columns.length - shown.length} more)` : ''
  const lines = [`${shown.map((c) => clip(c.name, 16)).join(' | ')}${more}`]
  for (const row of rows.slice(0, n)) {
    lines.push(
      shown
        .map((c) => {
          const v = row[c.name]
          return v === undefined ? '' : cellText(v, c.dtype, language)
        })
        .join(' | '),
    )
  }
  return lines
}

/** A file, or one sheet of a workbook, as the prompt shows it. */
type Table = Pick<
  DatasetProfile,
  'readCall' | 'rows' | 'rowsEstimated' | 'sampled' | 'columns' | 'sampleRows' | 'warnings'
> & {
  title: string
  /** The variable the section's read call assigns. */
  variable: string
  language: ReadLanguage
}

/** The column block, as detailed as `budget` characters allow. */
function columnBlock(table: Table, budget: number): string[] {
  const { language } = table
  const full = table.columns.map((c) => columnLine(c, table.rows, table.sampled, language))
  const total = full.reduce((n, line) => n + line.length + 1, 0)
  if (total <= budget) return full
  // As many full lines as fit (keeping room for the rest in short form), then the rest in short form.
  const short = table.columns.map((c) => shortColumn(c, language))
  const restShort = new Array<number>(short.length + 1).fill(0) // characters of short[i:] joined
  for (let i = short.length - 1; i >= 0; i--)
    restShort[i] = (restShort[i + 1] as number) + (short[i] as string).length + 2
  const lines: string[] = []
  let used = 0
  let i = 0
  while (i < full.length) {
    const line = full[i] as string
    if (used + line.length + 1 + Math.min(restShort[i + 1] as number, budget / 2) > budget) break
    lines.push(line)
    used += line.length + 1
    i++
  }
  if (i === full.length) return lines
  const rest = short.slice(i)
  const shortLine = `- more: ${rest.join(', ')}`
  if (used + shortLine.length <= budget) {
    lines.push(shortLine)
    return lines
  }
  // Too many even by name: list what fits, then summarize the rest by dtype.
  const dtypes = new Map<string, number>()
  for (const c of table.columns.slice(i)) {
    const type = typeName(c.dtype, language)
    dtypes.set(type, (dtypes.get(type) ?? 0) + 1)
  }
  const summary = [...dtypes]
    .sort((a, b) => b[1] - a[1])
    .map(([d, n]) => `${thousands(n)} ${d}`)
    .join(', ')
  const last = table.columns[table.columns.length - 1] as ColumnProfile
  const names: string[] = []
  const tail = (listed: number) =>
    ` … ${thousands(rest.length - listed)} more up to ${py(clip(last.name, 30))}. Of the ${thousands(rest.length)} columns here: ${summary}; list them with ${language === 'r' ? 'names(df) or table(sapply(df, class))' : 'df.columns or df.dtypes.value_counts()'}`
  let length = '- more: '.length + tail(0).length
  for (const item of rest) {
    if (used + length + item.length + 2 > budget) break
    names.push(item)
    length += item.length + 2
  }
  lines.push(`- more: ${names.join(', ')}${tail(names.length)}`)
  return lines
}

function section(table: Table, budgetTokens: number): string {
  const budget = budgetTokens * CHARS_PER_TOKEN
  const header = [
    `## ${table.title} — ${count(table.rows, table.rowsEstimated)} rows × ${thousands(table.columns.length)} columns`,
    `${table.variable} ${table.language === 'r' ? '<-' : '='} ${table.readCall}`,
  ]
  const said = table.language === 'r' ? table.warnings.map(rWarning) : table.warnings
  const warnings = said.slice(0, MAX_WARNINGS).map((w) => `- ${w}`)
  if (table.warnings.length > MAX_WARNINGS)
    warnings.push(`- (${table.warnings.length - MAX_WARNINGS} more warnings)`)
  let columnsTitle = 'Columns:'
  if (table.columns.length > 30) {
    const dtypes = new Map<string, number>()
    for (const c of table.columns) {
      const type = typeName(c.dtype, table.language)
      dtypes.set(type, (dtypes.get(type) ?? 0) + 1)
    }
    const counts = [...dtypes].sort((a, b) => b[1] - a[1]).map(([d, n]) => `${thousands(n)} ${d}`)
    columnsTitle = `Columns (${counts.join(', ')}):`
  }
  const render = (columns: string[], samples: string[], warn: string[]) =>
    [
      ...header,
      columnsTitle,
      ...columns,
      ...(samples.length > 0 ? ['Sample rows:', ...samples] : []),
      ...(warn.length > 0 ? ['Warnings:', ...warn] : []),
    ].join('\n')
  for (const n of [5, 3, 0]) {
    const samples = sampleLines(table.columns, table.sampleRows, n, table.language)
    const fixed = render([], samples, warnings).length
    const columns = columnBlock(table, budget - fixed)
    const text = render(columns, samples, warnings)
    if (text.length <= budget || n === 0) {
      if (text.length <= budget) return text
      // Still over: keep the warnings that fit.
      const kept: string[] = []
      let size = render(columns, samples, []).length + 'Warnings:\n'.length
      for (const w of warnings) {
        if (size + w.length + 1 > budget) break
        kept.push(w)
        size += w.length + 1
      }
      if (kept.length < warnings.length) kept.push(`- (${warnings.length - kept.length} more warnings)`)
      return render(columns, samples, kept)
    }
  }
  return render([], [], [])
}

function sheetTable(
  profile: DatasetProfile,
  sheet: SheetProfile,
  variable: string,
  language: ReadLanguage,
): Table {
  const first = profile.sheets?.[0] === sheet
  return {
    title: `data/${profile.name} [sheet ${quoteName(sheet.name, language)}] (Excel)`,
    variable,
    language,
    readCall: language === 'r' ? rReadCall(profile, { name: sheet.name, first }) : sheet.readCall,
    rows: sheet.rows,
    rowsEstimated: sheet.rowsEstimated,
    columns: sheet.columns,
    sampleRows: sheet.sampleRows,
    warnings: sheet.warnings,
  }
}

const FORMAT_NAMES: Record<string, string> = {
  csv: 'CSV',
  tsv: 'TSV',
  json: 'JSON',
  ndjson: 'NDJSON',
  excel: 'Excel',
  parquet: 'Parquet',
  unknown: 'unknown format',
}

function fileSection(
  profile: DatasetProfile,
  budgetTokens: number,
  variables: Variables,
  language: ReadLanguage,
): string {
  if (profile.error) return `## data/${profile.name} — could not be profiled\n${profile.error}`
  if (profile.sqlTable) {
    const columns = profile.columns.map((column) => column.name).join(', ')
    return `## ${profile.name}: too large for the sandbox, kept on the host as the SQL table ${profile.sqlTable} (not in data/)\nQuery it with sql("SELECT … FROM ${profile.sqlTable}") and aggregate in SQL; about ${profile.rows.toLocaleString('en-US')} rows; columns: ${columns}`
  }
  const kind = `${FORMAT_NAMES[profile.format] ?? profile.format}${profile.compression ? `, ${profile.compression}` : ''}${profile.encoding && profile.encoding !== 'UTF-8' ? `, ${profile.encoding}` : ''}`
  if (profile.sheets && profile.sheets.length > 1) {
    // The workbook's sheets share the budget: the first gets half, the others the rest.
    const [first, ...others] = profile.sheets as [SheetProfile, ...SheetProfile[]]
    const each = Math.max(60, Math.floor(budgetTokens / 2 / others.length))
    const intro =
      language === 'r'
        ? rWorkbookIntro(profile, profile.sheets.length)
        : `## data/${profile.name} (Excel workbook, ${profile.sheets.length} sheets; pd.read_excel(${py(`data/${profile.name}`)}, sheet_name=None) reads all as a dict)`
    return [
      intro,
      section(
        sheetTable(profile, first, variables.take(`${profile.name}_${first.name}`), language),
        Math.floor(budgetTokens / 2),
      ),
      ...others.map((s) =>
        section(sheetTable(profile, s, variables.take(`${profile.name}_${s.name}`), language), each),
      ),
    ].join('\n')
  }
  return section(
    {
      title: `data/${profile.name} (${kind})`,
      variable: variables.take(profile.name),
      language,
      readCall: language === 'r' ? rReadCall(profile) : profile.readCall,
      rows: profile.rows,
      rowsEstimated: profile.rowsEstimated,
      sampled: profile.sampled,
      columns: profile.columns,
      sampleRows: profile.sampleRows,
      warnings: profile.warnings,
    },
    budgetTokens,
  )
}

/**
 * Columns that appear, by name, in more than one file: candidates for joins. One line per set of
 * files, with each column's dtype (and a note where the dtypes differ, since merge needs them equal).
 */
export function joinHints(profiles: DatasetProfile[]): string[] {
  const byName = new Map<string, { file: string; dtype: string }[]>()
  for (const profile of profiles) {
    if (profile.error) continue
    const tables =
      profile.sheets && profile.sheets.length > 0
        ? profile.sheets.map((s) => ({ file: `${profile.name}[${s.name}]`, columns: s.columns }))
        : [{ file: profile.name, columns: profile.columns }]
    for (const table of tables) {
      for (const column of table.columns) {
        const list = byName.get(column.name) ?? []
        if (!list.some((p) => p.file === table.file)) list.push({ file: table.file, dtype: column.dtype })
        byName.set(column.name, list)
      }
    }
  }
  const groups = new Map<string, string[]>()
  for (const [name, places] of byName) {
    if (places.length < 2) continue
    const key = places.map((p) => p.file).join(', ')
    const dtypes = [...new Set(places.map((p) => p.dtype))]
    const item = `${py(clip(name, NAME_CHARS))} ${dtypes.length === 1 ? dtypes[0] : `${places.map((p) => p.dtype).join('/')} (dtypes differ: convert before merging)`}`
    groups.set(key, [...(groups.get(key) ?? []), item])
  }
  return [...groups].map(([files, columns]) => {
    const shown = columns.slice(0, 12)
    const more = columns.length > shown.length ? `, … (${columns.length - shown.length} more)` : ''
    return `- ${files}: ${shown.join(', ')}${more}`
  })
}

const PYTHON_KEYWORDS = new Set(
  'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield pd np plt function repeat next'.split(
    ' ',
  ),
)

/** Python variable names for the tables: `df` for a lone table, else one from each file's name. */
class Variables {
  private readonly used = new Set<string>()
  constructor(private readonly single: boolean) {}

  take(name: string): string {
    if (this.single) return 'df'
    let base = name
      .replace(/\.(csv|tsv|txt|dat|tab|jsonl?|ndjson|xlsx|xlsm|parquet|pq|gz|zip|pkl)/gi, '')
      .toLowerCase()
      .replace(/[^a-z0-9_]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, 30)
    if (base === '' || /^\d/.test(base) || PYTHON_KEYWORDS.has(base)) base = `df_${base}`.replace(/_$/, '')
    let variable = base
    for (let n = 2; this.used.has(variable); n++) variable = `${base}_${n}`
    this.used.add(variable)
    return variable
  }
}

export function formatProfiles(profiles: DatasetProfile[], options: FormatOptions = {}): string {
  const budget = options.tokensPerFile ?? DEFAULT_TOKENS_PER_FILE
  const tables = profiles.reduce((n, p) => n + (p.error ? 0 : Math.max(1, p.sheets?.length ?? 1)), 0)
  const variables = new Variables(tables <= 1)
  const language = options.language ?? 'python'
  const sections = profiles.map((profile) => fileSection(profile, budget, variables, language))
  const hints = joinHints(profiles)
  if (hints.length > 0) {
    const shown = hints.slice(0, 20)
    if (hints.length > shown.length) shown.push(`- (${hints.length - shown.length} more shared columns)`)
    sections.push(['## Columns shared between files (possible join keys)', ...shown].join('\n'))
  }
  return sections.join('\n\n')
}
