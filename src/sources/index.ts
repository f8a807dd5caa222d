/**
 * The host's data sources for `sql()`: PostgreSQL, MySQL/MariaDB, SQLite, DuckDB and data files
 * queried in place, read-only, bounded and cancellable. `Sources` is the sandbox's QueryHost.
 * @module
 */
export { loadSourcesFile, type NamedSource, parseSourcesFile } from './config.js'
export {
  type Caller,
  type HostTable,
  type ListedSource,
  type SourceCaller,
  SourceDirectory,
  type SourceDirectoryOptions,
} from './directory.js'
export { type Catalog, type CatalogTable, DEFAULT_LIMITS, type Limits, type WriteAccess } from './source.js'
export {
  READ_ONLY_ROLE_HINT,
  type SourceProfile,
  Sources,
  type SourcesOptions,
  type SourceWarning,
} from './sources.js'
export {
  describeLocation,
  isDatabaseUrl,
  isQueryableFile,
  parseSource,
  redact,
  type SourceKind,
  type SourceSpec,
  sqlOnlyBytes,
  tableNameOf,
} from './spec.js'
