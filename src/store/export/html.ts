/**
 * A session as one self-contained HTML report: questions, answers (unsupported numbers marked),
 * code, outputs, tables and charts inline. No scripts and nothing external; everything from the
 * sandbox is escaped (model-written code can print anything).
 * @module
 */
import hljs from 'highlight.js/lib/core'
import python from 'highlight.js/lib/languages/python'
import sqlLanguage from 'highlight.js/lib/languages/sql'
import type { HistoryStep, SessionHistory, StoredArtifact } from '../types.js'
import { specOf, VEGA_LITE_MIME } from './chart-spec.js'
import { queryLine } from './sql.js'

hljs.registerLanguage('python', python)
hljs.registerLanguage('sql', sqlLanguage)

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string)

const TABLE_ROWS = 50

function table(data: Record<string, unknown[]>): string {
  const columns = Object.keys(data)
  const rows = Math.max(0, ...columns.map((c) => data[c]?.length ?? 0))
  const head = columns.map((c) => `<th>${escapeHtml(c)}</th>`).join('')
  const body = Array.from(
    { length: Math.min(rows, TABLE_ROWS) },
    (_, i) => `<tr>${columns.map((c) => `<td>${escapeHtml(String(data[c]?.[i] ?? ''))}</td>`).join('')}</tr>`,
  ).join('')
  const more = rows > TABLE_ROWS ? `<p class="note">${rows - TABLE_ROWS} more rows not shown</p>` : ''
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>${more}`
}

function result(
  view: HistoryStep['results'][number],
  image: (artifact: StoredArtifact) => Buffer | undefined,
): string {
  const png = view.image ? image(view.image) : undefined
  if (png) {
    // The chart's Vega-Lite spec rides along as a data block (never run: the page has no scripts).
    const spec = specOf(view.chart, view.chartEdit)
    const block = spec
      ? `<script type="${VEGA_LITE_MIME}" class="chart-spec">${JSON.stringify(spec).replace(/</g, '\\u003c')}</script>`
      : ''
    return `<img alt="${escapeHtml(view.image?.name ?? 'chart')}" src="data:image/png;base64,${png.toString('base64')}">${block}`
  }
  if (view.data && Object.keys(view.data).length > 0) return table(view.data)
  if (view.text !== undefined) return `<pre class="out">${escapeHtml(view.text)}</pre>`
  return ''
}

export function markNumbers(answer: string, unsupported: string[]): string {
  let html = escapeHtml(answer)
  for (const number of unsupported) {
    const escaped = escapeHtml(number)
    html = html.split(escaped).join(`<mark title="not found in any output of the code">${escaped}</mark>`)
  }
  return html.replace(/\n/g, '<br>')
}

export const STYLE = `
body{font:15px/1.5 system-ui,-apple-system,Segoe UI,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#1d2330;background:#fff}
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2.5rem;border-top:1px solid #e3e6ec;padding-top:1.2rem}
pre{background:#f6f8fa;border:1px solid #e3e6ec;border-radius:6px;padding:.7rem;overflow:auto;font:13px/1.4 ui-monospace,Menlo,Consolas,monospace}
pre.out{background:#fff}pre.err{background:#fff5f5;border-color:#f3c2c2;color:#8a1f1f}
.step{margin:1rem 0}.step h3{font-size:.85rem;color:#5b6475;margin:.2rem 0;text-transform:uppercase;letter-spacing:.04em}
.answer{background:#f0f7ff;border-left:4px solid #3b82f6;padding:.8rem 1rem;border-radius:4px}
mark{background:#ffe58f}img{max-width:100%;border:1px solid #e3e6ec;border-radius:6px}
table{border-collapse:collapse;font-size:13px;margin:.5rem 0}th,td{border:1px solid #e3e6ec;padding:.25rem .5rem;text-align:right}th{background:#f6f8fa}
.note{color:#5b6475;font-size:.85rem}.hljs-keyword,.hljs-built_in{color:#a626a4}.hljs-string{color:#50a14f}.hljs-comment{color:#a0a1a7;font-style:italic}.hljs-number{color:#986801}.hljs-title{color:#4078f2}`

/** One step: its code, what the guard stopped, its outputs, tables, charts and error. */
export function stepHtml(step: HistoryStep, image: (artifact: StoredArtifact) => Buffer | undefined): string {
  const parts = [`<div class="step"><h3>Step ${step.step}</h3>`]
  parts.push(`<pre><code>${hljs.highlight(step.code, { language: 'python' }).value}</code></pre>`)
  if (step.violations?.length) {
    parts.push(
      `<pre class="err">Not run: ${escapeHtml(step.violations.map((v) => `line ${v.line}: ${v.message}`).join('\n'))}</pre>`,
    )
  }
  for (const query of step.queries ?? [])
    parts.push(
      `<p class="note">${escapeHtml(queryLine(query))}</p><pre><code>${hljs.highlight(query.query, { language: 'sql' }).value}</code></pre>`,
    )
  if (step.stdout) parts.push(`<pre class="out">${escapeHtml(step.stdout)}</pre>`)
  if (step.stderr) parts.push(`<pre class="out">${escapeHtml(step.stderr)}</pre>`)
  for (const view of step.results) parts.push(result(view, image))
  if (step.stopped)
    parts.push(`<pre class="err">Stopped before it finished: ${escapeHtml(step.stopped)}</pre>`)
  if (step.error)
    parts.push(
      `<pre class="err">${escapeHtml(step.error.traceback || `${step.error.name}: ${step.error.value}`)}</pre>`,
    )
  if (step.files.length)
    parts.push(`<p class="note">Files: ${step.files.map((a) => escapeHtml(a.name)).join(', ')}</p>`)
  parts.push('</div>')
  return parts.join('\n')
}

export function toHtml(
  history: SessionHistory,
  image: (artifact: StoredArtifact) => Buffer | undefined,
): string {
  const { session } = history
  const parts = [
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`,
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">`,
    `<title>${escapeHtml(session.title)}</title><style>${STYLE}</style></head><body>`,
    `<h1>${escapeHtml(session.title)}</h1>`,
    `<p class="note">Analyst session ${escapeHtml(session.id)}${session.model ? ` · model ${escapeHtml(session.model)}` : ''} · data: ${
      history.datasets.map((d) => `data/${escapeHtml(d.name)}`).join(', ') || 'none'
    }</p>`,
  ]
  for (const run of history.runs) {
    parts.push(`<h2>${escapeHtml(run.question)}</h2>`)
    for (const step of run.steps) parts.push(stepHtml(step, image))
    if (run.answer) {
      parts.push(
        `<div class="answer"><strong>Answer${run.incomplete ? ' (incomplete)' : ''}</strong><br>${markNumbers(run.answer, run.unsupportedNumbers)}</div>`,
      )
      if (run.unsupportedNumbers.length) {
        parts.push(
          `<p class="note">Marked numbers appear in no output of the code: check them before relying on them.</p>`,
        )
      }
    } else if (run.error) {
      parts.push(`<p class="note">No answer: ${escapeHtml(run.error)}</p>`)
    }
  }
  parts.push('</body></html>')
  return parts.join('\n')
}
