/**
 * A chart drawn from its data (`Result.chart`): line, scatter, bar and pie charts as SVG with the
 * values on hover, a table of every value, and the PNG the sandbox rendered as the fallback (and
 * the only view for box plots, several axes, or data that cannot be drawn). The data is untrusted
 * sandbox output: it becomes text and numbers in elements, never markup.
 */
import { useState } from 'preact/hooks'
import type { Chart, PointChart } from '../../sandbox/charts.js'

const WIDTH = 640
const HEIGHT = 320
const MARGIN = { top: 16, right: 16, bottom: 40, left: 56 }
const PLOT_W = WIDTH - MARGIN.left - MARGIN.right
const PLOT_H = HEIGHT - MARGIN.top - MARGIN.bottom
const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563']

type Mode = 'chart' | 'table' | 'image'

/** A tick label: a few digits. */
function show(value: number | string): string {
  if (typeof value === 'string') return value
  if (Number.isInteger(value)) return String(value)
  return Number(value.toPrecision(5)).toString()
}

/** A value as plotted (float noise aside): for the tooltip and the table. */
function exact(value: number | string): string {
  if (typeof value === 'string') return value
  return Number(value.toPrecision(12)).toString()
}

/** A scale for one axis: numbers stay numbers, dates become times, other strings categories. */
function scaleOf(values: Array<number | string>, length: number, flip: boolean) {
  const isDate =
    values.length > 0 && values.every((v) => typeof v === 'string' && !Number.isNaN(Date.parse(v)))
  const categories = [...new Set(values.filter((v) => typeof v === 'string'))] as string[]
  const numeric = (v: number | string) =>
    typeof v === 'number' ? v : isDate ? Date.parse(v) : categories.indexOf(v)
  const all = values.map(numeric)
  let min = Math.min(...all)
  let max = Math.max(...all)
  if (!Number.isFinite(min) || !Number.isFinite(max)) [min, max] = [0, 1]
  if (min === max) [min, max] = [min - 1, max + 1]
  const at = (v: number | string) => {
    const share = (numeric(v) - min) / (max - min)
    return flip ? length - share * length : share * length
  }
  const ticks: Array<{ pos: number; label: string }> = []
  if (categories.length > 0 && !isDate) {
    categories.slice(0, 20).forEach((label) => void ticks.push({ pos: at(label), label }))
  } else {
    for (let i = 0; i <= 4; i++) {
      const value = min + ((max - min) * i) / 4
      const label = isDate ? new Date(value).toISOString().slice(0, 10) : show(value)
      ticks.push({ pos: flip ? length - (i / 4) * length : (i / 4) * length, label })
    }
  }
  return { at, ticks }
}

function Axes({ x, y }: { x: ReturnType<typeof scaleOf>['ticks']; y: ReturnType<typeof scaleOf>['ticks'] }) {
  return (
    <g class="axes">
      <line x1={0} y1={PLOT_H} x2={PLOT_W} y2={PLOT_H} />
      <line x1={0} y1={0} x2={0} y2={PLOT_H} />
      {x.map((tick) => (
        <text key={`x${tick.label}`} x={tick.pos} y={PLOT_H + 16} text-anchor="middle">
          {tick.label}
        </text>
      ))}
      {y.map((tick) => (
        <text key={`y${tick.label}`} x={-6} y={tick.pos + 4} text-anchor="end">
          {tick.label}
        </text>
      ))}
    </g>
  )
}

interface Hover {
  x: number
  y: number
  text: string
}

function Points({ chart, onHover }: { chart: PointChart; onHover: (hover?: Hover) => void }) {
  const points = chart.elements.flatMap((series) => series.points)
  const x = scaleOf(
    points.map((p) => p[0]),
    PLOT_W,
    false,
  )
  const y = scaleOf(
    points.map((p) => p[1]),
    PLOT_H,
    true,
  )
  const marks = chart.elements.flatMap((series, s) =>
    series.points.map((p) => ({ series: series.label, s, px: x.at(p[0]), py: y.at(p[1]), p })),
  )
  const nearest = (event: MouseEvent) => {
    const svg = (event.currentTarget as SVGGElement).ownerSVGElement
    const box = svg?.getBoundingClientRect()
    if (!box) return
    const mx = ((event.clientX - box.left) / box.width) * WIDTH - MARGIN.left
    const my = ((event.clientY - box.top) / box.height) * HEIGHT - MARGIN.top
    let best: (typeof marks)[number] | undefined
    let bestDistance = Number.POSITIVE_INFINITY
    for (const mark of marks) {
      const distance = (mark.px - mx) ** 2 + (chart.type === 'scatter' ? (mark.py - my) ** 2 : 0)
      if (distance < bestDistance) [best, bestDistance] = [mark, distance]
    }
    if (best)
      onHover({
        x: best.px + MARGIN.left,
        y: best.py + MARGIN.top,
        text: `${best.series}: ${chart.x_label ?? 'x'} ${exact(best.p[0])}, ${chart.y_label ?? 'y'} ${exact(best.p[1])}`,
      })
  }
  return (
    <g>
      <Axes x={x.ticks} y={y.ticks} />
      {chart.elements.map((series, s) =>
        chart.type === 'line' ? (
          <polyline
            key={series.label}
            fill="none"
            stroke={COLORS[s % COLORS.length]}
            stroke-width={2}
            points={series.points.map((p) => `${x.at(p[0])},${y.at(p[1])}`).join(' ')}
          />
        ) : (
          <g key={series.label} fill={COLORS[s % COLORS.length]}>
            {series.points.map((p, i) => (
              <circle key={i} cx={x.at(p[0])} cy={y.at(p[1])} r={3.5} />
            ))}
          </g>
        ),
      )}
      {/* biome-ignore lint/a11y/noStaticElementInteractions: hover is a convenience for the mouse; the Values tab gives every value to keyboards and screen readers */}
      <rect
        class="hover-area"
        width={PLOT_W}
        height={PLOT_H}
        fill="transparent"
        onMouseMove={nearest}
        onMouseLeave={() => onHover(undefined)}
      />
    </g>
  )
}

function Bars({
  chart,
  onHover,
}: {
  chart: Extract<Chart, { type: 'bar' }>
  onHover: (hover?: Hover) => void
}) {
  const groups = [...new Set(chart.elements.map((b) => b.group))]
  const labels = [...new Set(chart.elements.map((b) => b.label))]
  const values = chart.elements.map((b) => b.value)
  const y = scaleOf([0, ...values], PLOT_H, true)
  const slot = PLOT_W / Math.max(1, labels.length)
  const width = (slot * 0.8) / groups.length
  return (
    <g>
      <Axes x={labels.slice(0, 20).map((label, i) => ({ pos: slot * (i + 0.5), label }))} y={y.ticks} />
      {chart.elements.map((bar, i) => {
        const left = slot * labels.indexOf(bar.label) + slot * 0.1 + width * groups.indexOf(bar.group)
        const top = Math.min(y.at(bar.value), y.at(0))
        const text = `${groups.length > 1 ? `${bar.group} · ` : ''}${bar.label}: ${exact(bar.value)}`
        return (
          // biome-ignore lint/a11y/noStaticElementInteractions: as for the points, the Values tab is the accessible view
          <rect
            key={i}
            x={left}
            y={top}
            width={width}
            height={Math.abs(y.at(0) - y.at(bar.value))}
            fill={COLORS[groups.indexOf(bar.group) % COLORS.length]}
            onMouseEnter={() => onHover({ x: left + width / 2 + MARGIN.left, y: top + MARGIN.top, text })}
            onMouseLeave={() => onHover(undefined)}
          />
        )
      })}
    </g>
  )
}

function Pie({
  chart,
  onHover,
}: {
  chart: Extract<Chart, { type: 'pie' }>
  onHover: (hover?: Hover) => void
}) {
  const radius = PLOT_H / 2
  const cx = PLOT_W / 2
  const cy = PLOT_H / 2
  let start = -90
  return (
    <g>
      {chart.elements.map((slice, i) => {
        const from = (start * Math.PI) / 180
        start += slice.angle
        const to = (start * Math.PI) / 180
        const large = slice.angle > 180 ? 1 : 0
        const path = `M${cx},${cy} L${cx + radius * Math.cos(from)},${cy + radius * Math.sin(from)} A${radius},${radius} 0 ${large} 1 ${cx + radius * Math.cos(to)},${cy + radius * Math.sin(to)} Z`
        const mid = (from + to) / 2
        const text = `${slice.label}: ${exact((slice.angle / 360) * 100)}%`
        return (
          // biome-ignore lint/a11y/noStaticElementInteractions: as for the points, the Values tab is the accessible view
          <path
            key={i}
            d={path}
            fill={COLORS[i % COLORS.length]}
            stroke="#fff"
            onMouseEnter={() =>
              onHover({
                x: cx + (radius / 2) * Math.cos(mid) + MARGIN.left,
                y: cy + (radius / 2) * Math.sin(mid) + MARGIN.top,
                text,
              })
            }
            onMouseLeave={() => onHover(undefined)}
          />
        )
      })}
    </g>
  )
}

/** Every value of the chart as rows: what the table view shows. */
export function chartRows(chart: Chart): { columns: string[]; rows: Array<Array<number | string>> } {
  switch (chart.type) {
    case 'line':
    case 'scatter':
      return {
        columns: ['series', chart.x_label ?? 'x', chart.y_label ?? 'y'],
        rows: chart.elements.flatMap((s) => s.points.map((p) => [s.label, p[0], p[1]])),
      }
    case 'bar':
      return {
        columns: ['group', chart.x_label ?? 'label', chart.y_label ?? 'value'],
        rows: chart.elements.map((b) => [b.group, b.label, b.value]),
      }
    case 'pie':
      return {
        columns: ['label', 'share %', 'angle'],
        rows: chart.elements.map((p) => [p.label, (p.angle / 360) * 100, p.angle]),
      }
    case 'box_and_whisker':
      return {
        columns: [chart.x_label ?? 'label', 'min', 'q1', 'median', 'q3', 'max', 'outliers'],
        rows: chart.elements.map((b) => [
          b.label,
          b.min,
          b.first_quartile,
          b.median,
          b.third_quartile,
          b.max,
          b.outliers.map(show).join(' '),
        ]),
      }
    case 'superchart':
      return {
        columns: ['chart', ...['column 1', 'column 2', 'column 3']],
        rows: chart.elements.flatMap((c, i) =>
          chartRows(c).rows.map((row) => [c.title ?? `chart ${i + 1}`, ...row.slice(0, 3)]),
        ),
      }
    default:
      return { columns: [], rows: [] }
  }
}

const MAX_TABLE_ROWS = 500

function ValuesTable({ chart }: { chart: Chart }) {
  const { columns, rows } = chartRows(chart)
  return (
    <div class="table-wrap chart-table">
      <table class="data">
        <thead>
          <tr>
            {columns.map((name) => (
              <th key={name}>{name}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.slice(0, MAX_TABLE_ROWS).map((row, r) => (
            <tr key={r}>
              {row.map((value, c) => (
                <td key={c} class={typeof value === 'number' ? 'num' : 'str'}>
                  {exact(value)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length > MAX_TABLE_ROWS && (
        <div class="table-foot">
          first {MAX_TABLE_ROWS} of {rows.length} rows
        </div>
      )}
    </div>
  )
}

function drawable(chart: Chart | undefined): boolean {
  return chart !== undefined && ['line', 'scatter', 'bar', 'pie'].includes(chart.type)
}

export function ChartView({ chart, src, alt }: { chart?: Chart; src?: string; alt: string }) {
  const [mode, setMode] = useState<Mode>(drawable(chart) ? 'chart' : 'image')
  const [hover, setHover] = useState<Hover | undefined>()
  const modes: Mode[] = [
    ...(drawable(chart) ? (['chart'] as const) : []),
    ...(chart && chart.type !== 'unknown' ? (['table'] as const) : []),
    ...(src ? (['image'] as const) : []),
  ]
  return (
    <figure class="chart">
      {chart?.title && <figcaption class="chart-title">{chart.title}</figcaption>}
      {modes.length > 1 && (
        <div class="chart-modes" role="tablist">
          {modes.map((m) => (
            <button key={m} type="button" role="tab" aria-selected={mode === m} onClick={() => setMode(m)}>
              {m === 'chart' ? 'Chart' : m === 'table' ? 'Values' : 'Image'}
            </button>
          ))}
        </div>
      )}
      {mode === 'chart' && chart && (
        <div class="chart-canvas">
          <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={alt}>
            <g transform={`translate(${MARGIN.left},${MARGIN.top})`}>
              {(chart.type === 'line' || chart.type === 'scatter') && (
                <Points chart={chart} onHover={setHover} />
              )}
              {chart.type === 'bar' && <Bars chart={chart} onHover={setHover} />}
              {chart.type === 'pie' && <Pie chart={chart} onHover={setHover} />}
            </g>
          </svg>
          {hover && (
            <div
              class="chart-tooltip"
              style={{ left: `${(hover.x / WIDTH) * 100}%`, top: `${(hover.y / HEIGHT) * 100}%` }}
            >
              {hover.text}
            </div>
          )}
          {(chart.type === 'line' || chart.type === 'scatter') && chart.elements.length > 1 && (
            <div class="chart-legend">
              {chart.elements.map((series, s) => (
                <span key={series.label}>
                  <i style={{ background: COLORS[s % COLORS.length] }} /> {series.label}
                </span>
              ))}
            </div>
          )}
        </div>
      )}
      {mode === 'table' && chart && <ValuesTable chart={chart} />}
      {mode === 'image' && src && <img class="chart-image" src={src} alt={alt} loading="lazy" />}
    </figure>
  )
}
