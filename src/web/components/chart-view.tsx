/**
 * A chart drawn from its data (`Result.chart`) as a Vega-Lite spec (chart-spec.ts), by vega-embed:
 * values on hover, zoom and pan on continuous axes within the data's extent (drag, Ctrl or Cmd with
 * the wheel: chart-spec.ts; a double-click resets), another mark where the data allows, titles and axis titles a person can
 * change (kept with the step's result: drawn so again when the page opens, carried by the exports;
 * a shared page shows them and cannot change them), downloads as PNG, SVG and CSV, and Copy as code (the shown chart as a matplotlib
 * cell). Vega loads with the first chart shown (charts/draw.ts). Values lists every value; the PNG
 * the sandbox rendered stays as Image, and is the only view of a chart whose data cannot be drawn.
 * The data is untrusted sandbox output: it reaches the spec as values and the page as text, never
 * as markup.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import type { Chart } from '../../sandbox/charts.js'
import {
  type ChartEdit,
  type ChartMark,
  chartMarks,
  chartSpec,
  chartTable,
  drawable,
} from '../../store/export/chart-spec.js'
import type { DrawnChart } from '../charts/draw.js'
import { matplotlibCell } from '../charts/matplotlib.js'
import { count } from '../format.js'
import { useMedia } from '../media.js'
import { ScrollBox } from './scroll-box.js'

type Mode = 'chart' | 'table' | 'image'

const MARK_NAMES: Record<ChartMark, string> = { bar: 'Bar', line: 'Line', scatter: 'Scatter', area: 'Area' }
const MAX_TABLE_ROWS = 500

/** A value as plotted (float noise aside): for the table and the CSV. */
function exact(value: number | string | undefined): string {
  if (value === undefined) return ''
  if (typeof value === 'string') return value
  return Number(value.toPrecision(12)).toString()
}

/** RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. */
const csvField = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text)

/** The chart's values as CSV, under the columns' titles. */
export function chartCsv(chart: Chart): string {
  const { columns, rows } = chartTable(chart)
  const lines = [columns.map((c) => csvField(c.title))]
  for (const row of rows) lines.push(columns.map((c) => csvField(exact(row[c.field]))))
  return `${lines.map((line) => line.join(',')).join('\r\n')}\r\n`
}

function save(url: string, name: string) {
  const link = document.createElement('a')
  link.href = url
  link.download = name
  document.body.append(link)
  link.click()
  link.remove()
}

/** A file name from the chart's title: letters, digits and dashes. */
const fileName = (title: string | null | undefined) =>
  (title ?? '')
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 60) || 'chart'

function ValuesTable({ chart }: { chart: Chart }) {
  const { columns, rows } = chartTable(chart)
  return (
    <ScrollBox class="table-wrap chart-table">
      <table class="data">
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column.field}>{column.title}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.slice(0, MAX_TABLE_ROWS).map((row, r) => (
            <tr key={r}>
              {columns.map((column) => (
                <td key={column.field} class={typeof row[column.field] === 'number' ? 'num' : 'str'}>
                  {exact(row[column.field])}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length > MAX_TABLE_ROWS && (
        <div class="table-foot">
          first {count(MAX_TABLE_ROWS)} of {count(rows.length)} rows
        </div>
      )}
    </ScrollBox>
  )
}

/** The spec drawn into a box; the drawn view, for the downloads. */
function Canvas({
  spec,
  alt,
  onDrawn,
}: {
  spec: Record<string, unknown>
  alt: string
  onDrawn: (view?: DrawnChart) => void
}) {
  const box = useRef<HTMLDivElement>(null)
  // Drawn in the page's theme, as style.css follows the system's setting.
  const dark = useMedia('(prefers-color-scheme: dark)')
  const [problem, setProblem] = useState<string>()
  useEffect(() => {
    const element = box.current
    if (!element) return
    let view: DrawnChart | undefined
    let current = true
    import('../charts/draw.js')
      .then(({ drawChart }) => drawChart(element, spec, { dark, description: alt }))
      .then((drawn) => {
        if (!current) return drawn.finalize()
        view = drawn
        setProblem(undefined)
        onDrawn(drawn)
      })
      .catch((error: unknown) => {
        if (current) setProblem(error instanceof Error ? error.message : String(error))
      })
    return () => {
      current = false
      view?.finalize()
      onDrawn(undefined)
    }
  }, [spec, dark, alt, onDrawn])
  return (
    <>
      <div class="chart-canvas" ref={box} />
      {problem && (
        <p class="note warn" role="alert">
          The chart could not be drawn ({problem}): its values and image are above.
        </p>
      )}
    </>
  )
}

/** How keeping an edit with the step went. */
type Saving = { state: 'saving' | 'saved' } | { state: 'failed'; message: string }

/**
 * Mark, titles, downloads and Copy as code, for a chart drawn from its data. Without `onEdit`
 * (a shared page) the chart is shown as its owner shaped it, and cannot be changed.
 */
function ChartTools({
  chart,
  edit,
  onEdit,
  saving,
  spec,
  view,
}: {
  chart: Chart
  edit: ChartEdit
  onEdit?: (edit: ChartEdit) => void
  saving?: Saving
  spec: Record<string, unknown>
  view?: DrawnChart
}) {
  const [copied, setCopied] = useState<string>()
  const marks = chartMarks(chart)
  const two = chart.type !== 'pie' && chart.type !== 'superchart'
  const own = {
    title: chart.title ?? '',
    xTitle: ('x_label' in chart ? chart.x_label : null) ?? '',
    yTitle: ('y_label' in chart ? chart.y_label : null) ?? '',
  }
  const name = fileName(edit.title ?? chart.title)
  const field = (key: 'title' | 'xTitle' | 'yTitle', label: string) => (
    <label class="chart-field">
      {label}
      <input
        value={edit[key] ?? own[key]}
        onChange={(event) => onEdit?.({ ...edit, [key]: event.currentTarget.value })}
      />
    </label>
  )
  return (
    <div class="chart-tools">
      <div class="chart-toolbar">
        {onEdit && marks.length > 1 && (
          <label class="chart-field">
            Chart type
            <select
              value={edit.mark ?? marks[0]}
              onChange={(event) => onEdit({ ...edit, mark: event.currentTarget.value as ChartMark })}
            >
              {marks.map((mark) => (
                <option key={mark} value={mark}>
                  {MARK_NAMES[mark]}
                </option>
              ))}
            </select>
          </label>
        )}
        {onEdit && (
          <details class="chart-edit">
            <summary class="chart-edit-toggle">Titles</summary>
            <div class="chart-fields">
              {field('title', 'Chart title')}
              {two && field('xTitle', 'X axis title')}
              {two && field('yTitle', 'Y axis title')}
            </div>
          </details>
        )}
        {onEdit && Object.keys(edit).length > 0 && (
          <button type="button" class="button secondary small" onClick={() => onEdit({})}>
            As drawn
          </button>
        )}
        {(['png', 'svg'] as const).map((format) => (
          <button
            key={format}
            type="button"
            class="button secondary small"
            disabled={!view}
            onClick={() => void view?.image(format).then((url) => save(url, `${name}.${format}`))}
          >
            {format.toUpperCase()}
          </button>
        ))}
        <button
          type="button"
          class="button secondary small"
          onClick={() => {
            const url = URL.createObjectURL(new Blob([chartCsv(chart)], { type: 'text/csv' }))
            save(url, `${name}.csv`)
            setTimeout(() => URL.revokeObjectURL(url), 60_000)
          }}
        >
          CSV
        </button>
        <button
          type="button"
          class="button secondary small"
          onClick={() => {
            const code = matplotlibCell(spec)
            setCopied(code)
            void navigator.clipboard?.writeText(code).catch(() => undefined)
          }}
        >
          Copy as code
        </button>
      </div>
      {saving?.state === 'failed' ? (
        <p class="note warn" role="alert">
          The change is shown here but was not kept ({saving.message}).
        </p>
      ) : (
        saving && (
          <p class="muted chart-saved" role="status">
            {saving.state === 'saving' ? 'Keeping the change…' : 'Kept with the step: exports show it.'}
          </p>
        )
      )}
      {copied && (
        <ScrollBox class="code copied" pre>
          {copied}
        </ScrollBox>
      )}
    </div>
  )
}

export function ChartView({
  chart,
  src,
  alt,
  kept,
  onKeep,
}: {
  chart?: Chart
  src?: string
  alt: string
  /** The edit kept with the result (the chart as its owner shaped it). */
  kept?: ChartEdit
  /** Keeps an edit with the step (none: a read-only page). */
  onKeep?: (edit: ChartEdit) => Promise<void>
}) {
  const canDraw = drawable(chart)
  const [mode, setMode] = useState<Mode>(canDraw ? 'chart' : 'image')
  const [edit, setEdit] = useState<ChartEdit>(kept ?? {})
  const [saving, setSaving] = useState<Saving>()
  // One keep at a time, in order: the last edit is the one the store holds.
  const keeping = useRef<Promise<void>>(Promise.resolve())
  const [view, setView] = useState<DrawnChart>()
  const spec = useMemo(() => (chart && canDraw ? chartSpec(chart, edit) : undefined), [chart, canDraw, edit])
  const change = (next: ChartEdit) => {
    setEdit(next)
    if (!onKeep) return
    setSaving({ state: 'saving' })
    keeping.current = keeping.current
      .then(() => onKeep(next))
      .then(
        () => setSaving({ state: 'saved' }),
        (error: unknown) =>
          setSaving({ state: 'failed', message: error instanceof Error ? error.message : String(error) }),
      )
  }
  const modes: Mode[] = [
    ...(spec ? (['chart'] as const) : []),
    ...(chart && chart.type !== 'unknown' ? (['table'] as const) : []),
    ...(src ? (['image'] as const) : []),
  ]
  const title = edit.title ?? chart?.title
  return (
    <figure class="chart" aria-label={title || alt}>
      {mode !== 'chart' && title && <figcaption class="chart-title">{title}</figcaption>}
      {modes.length > 1 && (
        <div class="chart-modes" role="tablist" aria-label="Show the chart as">
          {modes.map((m) => (
            <button key={m} type="button" role="tab" aria-selected={mode === m} onClick={() => setMode(m)}>
              {m === 'chart' ? 'Chart' : m === 'table' ? 'Values' : 'Image'}
            </button>
          ))}
        </div>
      )}
      {mode === 'chart' && chart && spec && (
        <>
          <ChartTools
            chart={chart}
            edit={edit}
            onEdit={onKeep ? change : undefined}
            saving={saving}
            spec={spec}
            view={view}
          />
          <Canvas spec={spec} alt={alt} onDrawn={setView} />
        </>
      )}
      {mode === 'table' && chart && <ValuesTable chart={chart} />}
      {mode === 'image' && src && <img class="chart-image" src={src} alt={alt} loading="lazy" />}
    </figure>
  )
}
