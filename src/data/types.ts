/**
 * The shapes of a dataset profile: what the model (and `analyst profile --json`) learns about a file
 * before any code runs. Names, dtypes and row counts are pandas' own view of the file, read with
 * `readCall` inside the sandbox.
 * @module
 */
import type { FindPython } from '../python.js'

export type DataFormat = 'csv' | 'tsv' | 'json' | 'ndjson' | 'excel' | 'parquet' | 'unknown'

/** A value as it appears in samples: numbers and booleans typed as pandas would type them. */
export type Cell = string | number | boolean | null

export interface ColumnProfile {
  /** The column name exactly as pandas yields it (`Unnamed: 0`, `a.1` for a duplicate `a`, `0` with header=None). */
  name: string
  /** The pandas dtype as `str(df[name].dtype)` prints it: `int64`, `float64`, `bool`, `object`, `datetime64[ns]`… */
  dtype: string
  /** Missing values (NaN, None, NaT) in the rows profiled. */
  nulls: number
  /** Distinct non-null values (in the sample when `distinctEstimated`). */
  distinct: number
  distinctEstimated?: boolean
  /** For numbers: smallest, largest and mean of the non-null values. */
  min?: number
  max?: number
  mean?: number
  /** For text (and booleans): the most frequent values with their counts, most frequent first. */
  top?: { value: string; count: number }[]
  /** For dates (a datetime dtype, or text that holds dates): the first and last, in ISO form. */
  dates?: { min: string; max: string; asText: boolean; dayFirst?: boolean }
  /** Two or three distinct non-null values, in file order. */
  samples: Cell[]
}

export interface SheetProfile {
  /** The sheet name as `pd.read_excel(..., sheet_name=None)` keys it. */
  name: string
  rows: number
  rowsEstimated?: boolean
  columns: ColumnProfile[]
  sampleRows: Record<string, Cell>[]
  warnings: string[]
  readCall: string
}

export interface DatasetProfile {
  /** The host path as given. */
  path: string
  /** The file name inside the sandbox: the code reads it at `data/<name>`. */
  name: string
  format: DataFormat
  /** Set when the table sits inside a compressed file. */
  compression?: 'gzip' | 'zip'
  /** Size of the file on disk. */
  bytes: number
  rows: number
  /** True when `rows` is estimated from a sample (huge files); exact otherwise. */
  rowsEstimated?: boolean
  /** True when column statistics come from a sample of the rows rather than all of them. */
  sampled?: boolean
  columns: ColumnProfile[]
  sampleRows: Record<string, Cell>[]
  warnings: string[]
  /** The pandas call that reads the file right inside the sandbox, e.g. `pd.read_csv('data/x.csv', sep=';')`. */
  readCall: string
  /** Text files: the encoding pandas must use (Python's name), and the field separator. */
  encoding?: string
  delimiter?: string
  /** Workbooks: every sheet. The top-level columns, rows and sample rows are the first sheet's. */
  sheets?: SheetProfile[]
  /** Why the file could not be profiled, and what to do. The other fields are then empty. */
  error?: string
  /**
   * Set when the file is too large for the sandbox: it stays on the host as this SQL table, which
   * the code queries with sql(), and is not in data/.
   */
  sqlTable?: string
}

export interface ProfileOptions {
  signal?: AbortSignal
  /**
   * The Python (with pandas) that reads JSON, Excel and Parquet files as the sandbox's pandas will.
   * @default the host's (ANALYST_PYTHON, else the first python3 with pandas)
   */
  python?: FindPython
}
