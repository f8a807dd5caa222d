import { writeFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import pc from 'picocolors'
import { sessionDetail, sessionSummary } from '../../server/views.js'
import { EXPORT_FORMATS, exportSession, isExportFormat } from '../../store/export/index.js'
import { queryLine } from '../../store/export/sql.js'
import {
  analystHome,
  loadSessionHistory,
  loadSessionStats,
  openStores,
  type SessionHistory,
  type Stores,
  sessionStats,
} from '../../store/index.js'
import { UsageError } from '../errors.js'

interface Common {
  env?: NodeJS.ProcessEnv
  stdout?: NodeJS.WritableStream
}

function open(options: Common): Promise<Stores> {
  return openStores(analystHome(options.env), options.env)
}

/** The session a CLI argument (an id or a unique prefix of one) names, with all its records. */
async function find(stores: Stores, prefix: string): Promise<SessionHistory> {
  const id = await stores.history.resolveSessionId(prefix)
  const found = id ? await loadSessionHistory(stores.history, id) : undefined
  if (!found)
    throw new UsageError(
      `No session ${prefix} in the history (or the prefix fits several)`,
      'List sessions with: analyst history',
    )
  return found
}

export interface HistoryOptions extends Common {
  json: boolean
  limit?: number
}

/** `analyst history`: stored sessions, newest first. */
export async function history(options: HistoryOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const stores = await open(options)
  try {
    const sessions = (await stores.history.listSessions({ limit: options.limit })).map(sessionSummary)
    if (options.json) {
      const withStats = await Promise.all(
        sessions.map(async (s) => ({ ...s, ...(await loadSessionStats(stores.history, s.id)) })),
      )
      stdout.write(`${JSON.stringify(withStats)}\n`)
      return 0
    }
    if (sessions.length === 0) {
      stdout.write('No sessions yet. Ask something: analyst ask "…" --data file.csv\n')
      return 0
    }
    for (const session of sessions) {
      const when = session.updatedAt.slice(0, 16).replace('T', ' ')
      const status = session.status === 'idle' ? '' : pc.yellow(` [${session.status}]`)
      stdout.write(
        `${pc.bold(session.id.slice(0, 8))}  ${pc.dim(when)}  ${session.questions} question(s)${status}  ${session.title}\n`,
      )
    }
    return 0
  } finally {
    await stores.close()
  }
}

export interface ShowOptions extends Common {
  session: string
  json: boolean
}

/** `analyst show SESSION`: its questions, steps and answers, with a summary. */
export async function show(options: ShowOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const stores = await open(options)
  try {
    const history = await find(stores, options.session)
    const detail = sessionDetail(history, (name) => `artifact:${name}`)
    const stats = sessionStats(
      history.runs,
      history.runs.flatMap((run) => run.steps),
    )
    if (options.json) {
      stdout.write(`${JSON.stringify({ ...detail, summary: stats })}\n`)
      return 0
    }
    stdout.write(
      `${pc.bold(detail.title)}\n${pc.dim(`session ${detail.id} · ${detail.model ?? 'model unknown'} · ${detail.status}`)}\n`,
    )
    stdout.write(pc.dim(`data: ${detail.datasets.map((d) => `data/${d.name}`).join(', ') || 'none'}\n`))
    if (detail.sources.length) stdout.write(pc.dim(`sources: ${detail.sources.join(', ')}\n`))
    for (const run of detail.runs) {
      stdout.write(`\n${pc.bold(`Q: ${run.question}`)}\n`)
      for (const step of run.steps) {
        const mark = step.violations?.length
          ? pc.yellow('blocked')
          : step.error
            ? pc.red(step.error.name)
            : pc.green('ok')
        stdout.write(pc.dim(`  step ${step.step} · ${mark}${pc.dim(` · ${step.durationMs} ms`)}\n`))
        for (const query of step.queries ?? []) {
          stdout.write(pc.dim(`    ${queryLine(query)}\n      ${query.query.split('\n').join('\n      ')}\n`))
        }
      }
      if (run.answer) stdout.write(`A${run.incomplete ? ' (incomplete)' : ''}: ${run.answer}\n`)
      else stdout.write(pc.yellow(`(${run.status}${run.error ? `: ${run.error}` : ''})\n`))
    }
    if (detail.blocked.length > 0) {
      stdout.write(pc.yellow(`\nBlocked attempts (${detail.blocked.length}):\n`))
      for (const b of detail.blocked) {
        const where = b.question ? `question ${b.question}, step ${b.step}` : 'session'
        stdout.write(pc.yellow(`  ${where} · ${b.source} · ${b.rule}: ${b.message}\n`))
      }
    }
    const rate = stats.successRate === null ? 'n/a' : `${Math.round(stats.successRate * 100)}%`
    stdout.write(
      pc.dim(
        `\n${stats.questions} question(s) · ${stats.executions} executions: ${stats.successful} successful, ${stats.failed} failed (${rate}) · ` +
          `${(stats.totalDurationMs / 1000).toFixed(1)} s running code (mean ${Math.round(stats.meanDurationMs ?? 0)} ms) · ${stats.usage.totalTokens} tokens\n`,
      ),
    )
    return 0
  } finally {
    await stores.close()
  }
}

export interface ExportOptions extends Common {
  session: string
  format: string
  out?: string
  /** --language: the session's code (a session does not record it). @default python */
  language?: 'python' | 'r'
  cwd: string
}

/** `analyst export SESSION --format ipynb|py|html [--out FILE]`; without --out, to stdout. */
export async function exportCommand(options: ExportOptions): Promise<number> {
  const format = options.format
  if (!isExportFormat(format)) {
    throw new UsageError(`Unknown format ${format}`, `Use one of: ${EXPORT_FORMATS.join(', ')}`)
  }
  const stores = await open(options)
  try {
    const text = await exportSession(
      await find(stores, options.session),
      format,
      stores.blobs,
      options.language,
    )
    if (options.out) {
      const path = resolve(options.cwd, options.out)
      await writeFile(path, text)
      process.stderr.write(`Saved ${path}\n`)
    } else {
      ;(options.stdout ?? process.stdout).write(text)
    }
    return 0
  } finally {
    await stores.close()
  }
}
