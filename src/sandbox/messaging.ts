/**
 * What a cell produces, in the shapes of E2B's code interpreter SDK (js/src/messaging.ts), so code
 * written against one runs against the other.
 * @module
 */

import type { QueryRecord } from './query.js'

/** One line that the cell wrote to stdout or stderr, delivered while the cell runs. */
export class OutputMessage {
  constructor(
    /** The line, with its newline when it had one. */
    readonly line: string,
    /** Unix epoch in milliseconds at which the host received it. */
    readonly timestamp: number,
    /** True for stderr. */
    readonly error: boolean,
  ) {}

  toString(): string {
    return this.line
  }
}

/** The exception a cell raised: returned in `Execution.error`, never thrown. */
export class ExecutionError {
  constructor(
    /** The exception's class name, e.g. `KeyError`; `TimeoutError` or `KernelDied` for the sandbox's own. */
    readonly name: string,
    /** Its message. */
    readonly value: string,
    /** The Python traceback as text. */
    readonly traceback: string,
  ) {}

  toJSON() {
    return { name: this.name, value: this.value, traceback: this.traceback }
  }
}

/** MIME type → data, as a Jupyter display message carries it. */
export type MimeBundle = Record<string, unknown>

/** The MIME types a `Result` has a field for, and the field's name (E2B's names). */
export const KNOWN_MIME = {
  'text/plain': 'text',
  'text/html': 'html',
  'text/markdown': 'markdown',
  'image/svg+xml': 'svg',
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'application/pdf': 'pdf',
  'text/latex': 'latex',
  'application/json': 'json',
  'application/javascript': 'javascript',
  'analyst/data': 'data',
  'analyst/chart': 'chart',
} as const

type KnownField = (typeof KNOWN_MIME)[keyof typeof KNOWN_MIME]

/**
 * One display output of a cell, with every MIME form it has. The value of the cell's last
 * expression has `isMainResult: true`; `display()` calls and figures have false.
 */
export class Result {
  readonly text?: string
  readonly html?: string
  readonly markdown?: string
  readonly svg?: string
  /** base64 */
  readonly png?: string
  /** base64 */
  readonly jpeg?: string
  /** base64 */
  readonly pdf?: string
  readonly latex?: string
  readonly json?: unknown
  readonly javascript?: string
  /** A DataFrame or Series as `{ column: values[] }`: JSON-safe, the labelled index kept, at most 10,000 rows. */
  readonly data?: Record<string, unknown[]>
  /** Structured chart data, when the engine extracts it. */
  readonly chart?: unknown
  /** Any other MIME type. */
  readonly extra?: Record<string, unknown>

  constructor(
    readonly raw: MimeBundle,
    readonly isMainResult: boolean,
  ) {
    const fields: Partial<Record<KnownField, unknown>> = {}
    const extra: Record<string, unknown> = {}
    for (const [mime, value] of Object.entries(raw)) {
      const field = KNOWN_MIME[mime as keyof typeof KNOWN_MIME]
      if (field) fields[field] = value
      else extra[mime] = value
    }
    Object.assign(this, fields)
    if (Object.keys(extra).length > 0) this.extra = extra
  }

  /** The forms this result has, e.g. `['html', 'png']` (text not listed, as in E2B). */
  formats(): string[] {
    const formats: string[] = []
    for (const field of Object.values(KNOWN_MIME)) {
      if (field !== 'text' && this[field] !== undefined) formats.push(field)
    }
    return [...formats, ...Object.keys(this.extra ?? {})]
  }

  toJSON() {
    const json: Record<string, unknown> = { isMainResult: this.isMainResult }
    for (const field of Object.values(KNOWN_MIME)) {
      if (this[field] !== undefined) json[field] = this[field]
    }
    if (this.extra) json.extra = this.extra
    return json
  }
}

/** A file that a cell created or changed in the workspace (outside `data/`). */
export interface Artifact {
  /** Path relative to the workspace, e.g. `out/chart.png`. */
  name: string
  /** Absolute path inside the sandbox, e.g. `/home/user/out/chart.png`. */
  path: string
  size: number
  mimeType: string
}

export interface Logs {
  stdout: string[]
  stderr: string[]
}

/** Everything one `runCode` call produced. */
export class Execution {
  constructor(
    public results: Result[] = [],
    public logs: Logs = { stdout: [], stderr: [] },
    public error?: ExecutionError,
    public executionCount?: number,
    /** Files the cell created or changed (an Analyst addition to E2B's shape). */
    public artifacts: Artifact[] = [],
    /** The queries the cell's sql() calls ran on the host's sources, in order (an Analyst addition). */
    public queries: QueryRecord[] = [],
  ) {}

  /** The main result's text, if the cell ended in an expression. */
  get text(): string | undefined {
    return this.results.find((result) => result.isMainResult)?.text
  }

  toJSON() {
    return {
      results: this.results.map((result) => result.toJSON()),
      logs: this.logs,
      error: this.error?.toJSON(),
      executionCount: this.executionCount,
      artifacts: this.artifacts,
      ...(this.queries.length > 0 ? { queries: this.queries } : {}),
    }
  }
}
