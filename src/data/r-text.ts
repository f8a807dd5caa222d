/**
 * The profiles' prompt text for a model that writes R: how each file is read in R (readr, readxl,
 * jsonlite), the columns' types as R sees them, missing values as NA, and the profilers' pandas
 * advice said in R. The profile itself stays pandas' view (types.ts); only its words change here.
 * @module
 */
import { py } from './python-literal.js'
import type { DatasetProfile } from './types.js'

/** The language the prompt text speaks to: how files are read and values written. */
export type ReadLanguage = 'python' | 'r'

/** An R string literal (double quotes, as R prints them). */
export function rString(text: string): string {
  return JSON.stringify(text)
}

/** Python's codec names, as readr's locale (iconv) knows them. */
const ENCODINGS: Record<string, string> = {
  'latin-1': 'latin1',
  cp1252: 'windows-1252',
  'utf-16': 'UTF-16',
  'utf-16-le': 'UTF-16LE',
  'utf-16-be': 'UTF-16BE',
  'utf-8-sig': 'UTF-8',
}

/** `readr::read_csv("data/x.csv")` and its kin: the call that reads the file (or a sheet) in R. */
export function rReadCall(profile: DatasetProfile, sheet?: { name: string; first: boolean }): string {
  const path = rString(`data/${profile.name}`)
  const args = (first: string, named: [string, string | undefined][]) =>
    [
      first,
      ...named.filter(([, value]) => value !== undefined).map(([key, value]) => `${key} = ${value}`),
    ].join(', ')
  switch (profile.format) {
    case 'csv':
    case 'tsv': {
      // What pandas' read call needed beyond its defaults, said in readr's words.
      const pandas = profile.readCall
      const encoding = profile.encoding && (ENCODINGS[profile.encoding.toLowerCase()] ?? profile.encoding)
      const locale: [string, string | undefined][] = [
        ['encoding', encoding && !/^utf-?8$/i.test(encoding) ? rString(encoding) : undefined],
        ['decimal_mark', /decimal=','/.test(pandas) ? '","' : undefined],
      ]
      const localeArg = locale.some(([, value]) => value !== undefined)
        ? `readr::locale(${args('', locale).replace(/^, /, '')})`
        : undefined
      const delimiter = profile.delimiter ?? (profile.format === 'tsv' ? '\t' : ',')
      const reader =
        delimiter === ',' ? 'readr::read_csv' : delimiter === '\t' ? 'readr::read_tsv' : 'readr::read_delim'
      return `${reader}(${args(path, [
        ['delim', reader === 'readr::read_delim' ? rString(delimiter) : undefined],
        ['col_names', /header=None/.test(pandas) ? 'FALSE' : undefined],
        ['locale', localeArg],
        ['show_col_types', 'FALSE'],
      ])})`
    }
    case 'excel':
      return `readxl::read_excel(${args(path, [['sheet', sheet && !sheet.first ? rString(sheet.name) : undefined]])})`
    case 'json':
      return `jsonlite::fromJSON(${profile.compression === 'gzip' ? `gzfile(${path})` : path})`
    case 'ndjson':
      return `jsonlite::stream_in(${profile.compression === 'gzip' ? 'gzfile' : 'file'}(${path}), verbose = FALSE)`
    case 'parquet':
      return `arrow::read_parquet(${path})`
    default:
      return `readr::read_file(${path})`
  }
}

/** pandas' dtype as the R column it becomes (readr's abbreviations). */
export function rType(dtype: string): string {
  if (/^u?int/i.test(dtype) || /^float/.test(dtype)) return 'dbl'
  if (dtype === 'bool' || dtype === 'boolean') return 'lgl'
  if (dtype.startsWith('datetime64')) return 'dttm'
  if (dtype === 'category') return 'fct'
  return 'chr'
}

/**
 * A profiler's warning, its pandas advice said in R: the finding stays, the fix is R's. Advice
 * with no R form is cut at the colon that starts it.
 */
export function rWarning(text: string): string {
  const column = (name: string) => `df[[${name}]]`
  const rewritten = text
    .replace(/pd\.to_datetime\(df\[([^\]]+)\], dayfirst=True\)/g, (_, n) => `lubridate::dmy(${column(n)})`)
    .replace(/pd\.to_datetime\(df\[([^\]]+)\]\)/g, (_, n) => `as.Date(${column(n)})`)
    .replace(
      /pd\.to_numeric\(df\[([^\]]+)\], errors='coerce'\) turns the text into NaN/g,
      (_, n) => `as.numeric(${column(n)}) turns the text into NA`,
    )
    .replace(/pd\.to_numeric\(df\[([^\]]+)\]\)/g, (_, n) => `as.numeric(${column(n)})`)
    .replace(/read with decimal=','/, 'read with locale = readr::locale(decimal_mark = ",")')
    .replace(
      /read with na_values=\[([^\]]*)\] or replace it with NaN/,
      'read with na = c("", "NA", $1) or replace it with NA',
    )
    .replace(/read with na_values=\{[^}]*\} or replace it with NaN/, 'replace it with NA')
    .replace(/\bpandas keeps\b/g, 'the reader keeps')
    .replace(/\bNaN\b/g, 'NA')
  if (!/pd\.|\.str\.|regex=|thousands=|sheet_name=/.test(rewritten)) return rewritten
  const cut = rewritten.search(/: (read with|convert with|strip them|pd\.)/)
  return cut > 0 ? `${rewritten.slice(0, cut)} (convert it in R)` : rewritten
}

/** The intro of a workbook of several sheets, and how R reads them all. */
export function rWorkbookIntro(profile: DatasetProfile, sheets: number): string {
  const path = rString(`data/${profile.name}`)
  return `## data/${profile.name} (Excel workbook, ${sheets} sheets; lapply(setNames(nm = readxl::excel_sheets(${path})), function(s) readxl::read_excel(${path}, sheet = s)) reads all as a named list)`
}

/** Python's literal for a sheet's name in a section title, R's in R. */
export function quoteName(name: string, language: ReadLanguage): string {
  return language === 'r' ? rString(name) : py(name)
}
