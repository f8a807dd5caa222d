/**
 * An eval run as one self-contained HTML page (no scripts, nothing external, everything the
 * sandbox printed escaped): the scores beside the published leaderboard (marked as published, not
 * measured here), charts by level and by concept, the grounding check, then every question, the
 * failed ones first, each with the expected and given answers and every step's code and outputs.
 * @module
 */
import { escapeHtml, markNumbers, STYLE, stepHtml } from '../store/export/html.js'
import type { HistoryStep, SessionHistory } from '../store/index.js'
import type { EvalQuestion } from './dataset.js'
import { clock, count, percent } from './format.js'
import type { QuestionResult } from './harness.js'
import { PUBLISHED } from './published.js'
import type { EvalReport } from './report.js'
import type { Scores } from './score.js'

export interface HtmlContext {
  /** The set's questions, for their text, constraints and format. */
  questions: Map<number, EvalQuestion>
  /** Each question's session, by session id, for its steps. */
  sessions: Map<string, SessionHistory>
  /** When the report was made. @default now */
  date?: Date
}

/** Output kept per stream of a step: a report of 257 questions stays readable. */
const OUTPUT_CHARS = 4000

const COLORS = { abq: '#2563eb', psaq: '#16a34a', uasq: '#d97706' }

const EXTRA_STYLE = `
.scores td:first-child,.scores th:first-child{text-align:left}.scores tr.ours td{font-weight:600;background:#f0f7ff}
.published td{color:#5b6475}.tag{font-size:.75rem;color:#5b6475;border:1px solid #e3e6ec;border-radius:4px;padding:0 .3rem;margin-left:.3rem}
details.q{border:1px solid #e3e6ec;border-radius:6px;margin:.6rem 0;padding:.4rem .8rem}details.q>summary{cursor:pointer;font-weight:600}
.lines{white-space:pre-line}.bad{color:#b42318}.good{color:#067647}.crash{color:#b42318;font-weight:600}
table.sub td:first-child,table.sub th:first-child{text-align:left}.legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 1rem;vertical-align:middle}`

function clip(text: string): string {
  return text.length > OUTPUT_CHARS
    ? `${text.slice(0, OUTPUT_CHARS)}\n… [${text.length - OUTPUT_CHARS} more characters]`
    : text
}

/** Grouped horizontal bars (ABQ, PSAQ, UASQ) for each group, as inline SVG. */
function barChart(title: string, groups: Record<string, Scores>): string {
  const names = Object.keys(groups)
  if (names.length === 0) return ''
  const label = 220
  const width = 420
  const bar = 9
  const rowHeight = bar * 3 + 12
  const height = names.length * rowHeight + 24
  const parts = [
    `<svg role="img" aria-label="${escapeHtml(title)}" width="${label + width + 60}" height="${height}" viewBox="0 0 ${label + width + 60} ${height}" xmlns="http://www.w3.org/2000/svg" font-family="system-ui,sans-serif" font-size="12">`,
  ]
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    const x = label + tick * width
    parts.push(
      `<line x1="${x}" y1="0" x2="${x}" y2="${height - 18}" stroke="#e3e6ec"/><text x="${x}" y="${height - 4}" text-anchor="middle" fill="#5b6475">${tick * 100}%</text>`,
    )
  }
  names.forEach((name, index) => {
    const scores = groups[name] as Scores
    const top = index * rowHeight + 4
    parts.push(
      `<text x="${label - 8}" y="${top + bar * 1.5 + 4}" text-anchor="end" fill="#1d2330">${escapeHtml(name)} (${scores.questions})</text>`,
    )
    ;(['abq', 'psaq', 'uasq'] as const).forEach((key, k) => {
      const w = Math.max(0.5, scores[key] * width)
      const y = top + k * bar
      parts.push(
        `<rect x="${label}" y="${y}" width="${w.toFixed(1)}" height="${bar - 1}" fill="${COLORS[key]}"><title>${key.toUpperCase()} ${percent(scores[key])}</title></rect>`,
        `<text x="${label + w + 4}" y="${y + bar - 1}" fill="#5b6475" font-size="10">${percent(scores[key])}</text>`,
      )
    })
  })
  parts.push('</svg>')
  return `<h3>${escapeHtml(title)}</h3>${parts.join('')}`
}

function scoresTable(report: EvalReport): string {
  const row = (name: string, s: { abq: number; psaq?: number; uasq?: number }, extra: string, cls: string) =>
    `<tr class="${cls}"><td>${name}${extra}</td><td>${percent(s.abq)}</td><td>${s.psaq === undefined ? '–' : percent(s.psaq)}</td><td>${s.uasq === undefined ? '–' : percent(s.uasq)}</td></tr>`
  const rows = [
    row(`Analyst · ${escapeHtml(report.model)}`, report, '<span class="tag">this run</span>', 'ours'),
    ...PUBLISHED.map((p) =>
      row(
        escapeHtml(p.name),
        p,
        `<span class="tag" title="${escapeHtml(p.source)}">published, not measured here</span>`,
        'published',
      ),
    ),
  ]
  return `<table class="scores"><thead><tr><th></th><th>ABQ</th><th>PSAQ</th><th>UASQ</th></tr></thead><tbody>${rows.join('')}</tbody></table>
<p class="note">ABQ: questions with every sub-answer right. PSAQ: mean share of sub-answers right per question. UASQ: share right over all sub-answers. Published figures come from their sources (${[...new Set(PUBLISHED.map((p) => escapeHtml(p.source)))].join('; ')}), with other agents, prompts and scoring runs; here every question counts, including crashed ones.</p>`
}

function subAnswersTable(result: QuestionResult): string {
  const rows = result.subAnswers.map(
    (sub) =>
      `<tr><td>${escapeHtml(sub.name)}</td><td>${escapeHtml(sub.expected)}</td><td class="${sub.correct ? 'good' : 'bad'}">${sub.got === null ? '<em>none given</em>' : escapeHtml(sub.got)}</td><td>${sub.correct ? '✓' : '✗'}</td></tr>`,
  )
  return `<table class="sub"><thead><tr><th>answer</th><th>expected</th><th>given</th><th></th></tr></thead><tbody>${rows.join('')}</tbody></table>`
}

function questionHtml(result: QuestionResult, context: HtmlContext): string {
  const question = context.questions.get(result.id)
  const session = result.sessionId ? context.sessions.get(result.sessionId) : undefined
  const run = session?.runs.at(-1)
  const mark = result.error
    ? '<span class="crash">crashed</span>'
    : result.correct
      ? '<span class="good">right</span>'
      : '<span class="bad">wrong</span>'
  const parts = [
    `<details class="q" id="q${result.id}"${result.correct ? '' : ' open'}><summary>#${result.id} · ${escapeHtml(result.level)} · ${mark} · ${escapeHtml(result.concepts.join(', '))} · ${result.steps} step(s) · ${(result.durationMs / 1000).toFixed(1)} s · ${count(result.tokens)} tokens</summary>`,
  ]
  if (question) {
    parts.push(`<p>${escapeHtml(question.question)}</p>`)
    if (question.constraints)
      parts.push(
        `<p class="note lines"><strong>Constraints:</strong> ${escapeHtml(question.constraints)}</p>`,
      )
    parts.push(
      `<p class="note lines"><strong>Format:</strong> ${escapeHtml(question.format)}\n<strong>Data:</strong> ${escapeHtml(question.fileName)}</p>`,
    )
  }
  parts.push(subAnswersTable(result))
  if (result.error) parts.push(`<pre class="err">${escapeHtml(result.error)}</pre>`)
  for (const step of run?.steps ?? []) {
    const clipped: HistoryStep = { ...step, stdout: clip(step.stdout), stderr: clip(step.stderr) }
    parts.push(stepHtml(clipped, () => undefined))
  }
  if (result.answer) {
    parts.push(
      `<div class="answer"><strong>Answer${result.incomplete ? ' (incomplete: the step cap ended it)' : ''}</strong><br>${markNumbers(clip(result.answer), result.unsupportedNumbers)}</div>`,
    )
  }
  if (result.sessionId)
    parts.push(
      `<p class="note">Session ${escapeHtml(result.sessionId)}: analyst show ${escapeHtml(result.sessionId.slice(0, 8))}</p>`,
    )
  parts.push('</details>')
  return parts.join('\n')
}

export function renderHtml(report: EvalReport, context: HtmlContext): string {
  const date = (context.date ?? new Date()).toISOString().slice(0, 16).replace('T', ' ')
  const failed = report.results.filter((r) => !r.correct)
  const right = report.results.filter((r) => r.correct)
  const setName = report.dataset.slice(report.dataset.lastIndexOf('/') + 1)
  const title = `Analyst on ${setName}: ${percent(report.abq)} ABQ`
  const { grounding } = report
  const parts = [
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`,
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">`,
    `<title>${escapeHtml(title)}</title><style>${STYLE}${EXTRA_STYLE}</style></head><body>`,
    `<h1>${escapeHtml(title)}</h1>`,
    `<p class="note">Eval run ${escapeHtml(report.runId)} · model ${escapeHtml(report.model)} · ${escapeHtml(report.dataset)} · ${report.questions}${report.status === 'done' ? '' : ` of ${report.planned}`} questions${report.status === 'done' ? '' : ' (interrupted)'} · ${clock(report.durationMs)} · ${count(report.tokens)} tokens · ${report.errors} crashed · report of ${date} UTC</p>`,
    '<h2>Scores</h2>',
    scoresTable(report),
    `<p class="legend"><span style="background:${COLORS.abq}"></span>ABQ<span style="background:${COLORS.psaq}"></span>PSAQ<span style="background:${COLORS.uasq}"></span>UASQ</p>`,
    barChart('By level', report.byLevel),
    barChart('By concept', report.byConcept),
    '<h2>Grounding</h2>',
    `<p>${percent(grounding.share)} of the answers given (${grounding.withUnsupportedNumbers} of ${grounding.answers}) state numbers that no output of their code shows; they are marked in the answers below.</p>`,
    `<h2>Wrong or crashed (${failed.length})</h2>`,
    ...failed.map((result) => questionHtml(result, context)),
    `<h2>Right (${right.length})</h2>`,
    ...right.map((result) => questionHtml(result, context)),
    '</body></html>',
  ]
  return parts.join('\n')
}
