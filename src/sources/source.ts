/**
 * One source kind's seam: what PostgreSQL, MySQL, SQLite and DuckDB each implement, and what
 * `Sources` (the sandbox's QueryHost) and the description need of them.
 * @module
 */
import type { QueryOptions, QueryStream } from '../sandbox/query.js'
import type { SourceKind } from './spec.js'

/** The caps of one query. */
export interface Limits {
  /** @default 1_000_000 */
  maxRows: number
  /** An estimate of the rows' size as they travel (text lengths, 8 bytes a number). @default 256 MiB */
  maxBytes: number
}

export const DEFAULT_LIMITS: Limits = { maxRows: 1_000_000, maxBytes: 256 * 1024 * 1024 }

export interface RunOptions extends QueryOptions {
  limits: Limits
}

export interface CatalogColumn {
  name: string
  type: string
  nullable?: boolean
  comment?: string
  /** A few distinct values, as text. */
  samples?: string[]
}

export interface CatalogTable {
  /** As a query names it: `schema.table` outside the default schema. */
  name: string
  kind: 'table' | 'view'
  columns: CatalogColumn[]
  primaryKey?: string[]
  foreignKeys?: { columns: string[]; references: string; referencedColumns: string[] }[]
  /** The catalog's estimate, not a count. */
  rowEstimate?: number
  comment?: string
}

export interface Catalog {
  tables: CatalogTable[]
}

/** Whether the role can change data; `reason` says how, for `analyst doctor`. */
export interface WriteAccess {
  canWrite: boolean
  reason: string
}

export interface Source {
  readonly kind: SourceKind
  /** Connects once: a wrong URL, password or path fails here, with a message that says what to do. */
  open(): Promise<void>
  run(
    query: string,
    params: unknown[] | Record<string, unknown> | undefined,
    options: RunOptions,
  ): Promise<QueryStream>
  /**
   * Tables and views, columns, keys, estimates and comments, in a few bulk catalog queries however
   * many tables there are; samples where the catalog keeps them (PostgreSQL's statistics). The
   * others come from the tables' first rows (samples.ts), for the tables a description needs.
   */
  catalog(): Promise<Catalog>
  canWrite(): Promise<WriteAccess>
  close(): Promise<void>
}
