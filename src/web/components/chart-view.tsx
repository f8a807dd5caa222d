/**
 * A chart drawn from its data (`Result.chart`): line, scatter, bar and pie charts as SVG with the
 * values on hover, a table of every value, and the PNG the sandbox rendered as the fallback (and
 * the only view for box plots, several axes, data that cannot be drawn, and bars that do not say
 * where they stand: E2B's own extractor pairs them with tick labels). Bars are drawn at their own
 * extents (chart-layout.ts), so a histogram shows its bins. The data is untrusted sandbox output:
 * it becomes text and numbers in elements, never markup.
 */
import { useState } from 'preact/hooks'
import { barsPlaced, type Chart, type PlacedBarChart, type PointChart } from '../../sandbox/charts.js'
import {
  placeBars,
  referenceSegments,
  referenceValues,
  type Segment,
  scaleOf,
  show,
  type Tick,
} from '../chart-layout.js'
import { ScrollBox } from './scroll-box.js'

const WIDTH = 640
const HEIGHT = 320
const MARGIN = { top: 16, right: 16, bottom: 44, left: 64 }
const PLOT_W = WIDTH - MARGIN.left - MARGIN.right
const PLOT_H = HEIGHT - MARGIN.top - MARGIN.bottom
const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563']

type Mode = 'chart' | 'table' | 'image'

/** A value as plotted (float noise aside): for the tooltip and the table. */
function exact(value: number | string): string {
  if (typeof value === 'string') return value
  return Number(value.toPrecision(12)).toString()
}

/** Tick labels centred on their tick, but kept inside the figure at its right edge. */
const anchor = (pos: number, width: number) => (pos > width - 24 ? 'end' : 'middle')

function Axes({
  x,
  y,
  xLabel,
  yLabel,
}: {
  x: Tick[]
  y: Tick[]
  xLabel?: string | null
  yLabel?: string | null
}) {
  return (
    <g class="axes">
      <line x1={0} y1={PLOT_H} x2={PLOT_W} y2={PLOT_H} />
      <line x1={0} y1={0} x2={0} y2={PLOT_H} />
      {x.map((tick) => (
        <text key={`x${tick.label}`} x={tick.pos} y={PLOT_H + 16} text-anchor={anchor(tick.pos, PLOT_W)}>
          {tick.label}
        </text>
      ))}
      {y.map((tick) => (
        <text key={`y${tick.label}`} x={-6} y={tick.pos + 4} text-anchor="end">
          {tick.label}
        </text>
      ))}
      {xLabel && (
        <text class="axis-label" x={PLOT_W / 2} y={PLOT_H + 34} text-anchor="middle">
          {xLabel}
        </text>
      )}
      {yLabel && (
        <text
          class="axis-label"
          transform={`translate(${-MARGIN.left + 12},${PLOT_H / 2}) rotate(-90)`}
          text-anchor="middle"
        >
          {yLabel}
        </text>
      )}
    </g>
  )
}

/** Lines across the plot (axvline, axhline): dashed, named at their end. */
function References({ segments }: { segments: Segment[] }) {
  return (
    <g class="references">
      {segments.map(({ line, x1, y1, x2, y2 }, i) => (
        <g key={i}>
          <line x1={x1} y1={y1} x2={x2} y2={y2} stroke="#111827" stroke-width={1.5} stroke-dasharray="5 4" />
          {line.label && (
            <text
              x={line.orientation === 'vertical' ? x1 + 4 : x2 - 4}
              y={line.orientation === 'vertical' ? 12 : y1 - 4}
              text-anchor={line.orientation === 'vertical' ? 'start' : 'end'}
            >
              {line.label}
            </text>
          )}
        </g>
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
  const across = referenceValues(chart.reference_lines)
  const x = scaleOf([...points.map((p) => p[0]), ...across.x], PLOT_W, { log: chart.x_scale === 'log' })
  const y = scaleOf([...points.map((p) => p[1]), ...across.y], PLOT_H, {
    flip: true,
    log: chart.y_scale === 'log',
  })
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
      <Axes x={x.ticks} y={y.ticks} xLabel={chart.x_label} yLabel={chart.y_label} />
      {chart.elements.map((series, s) =>
        chart.type === 'line' && !series.markers_only ? (
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
      <References segments={referenceSegments(chart.reference_lines, x, y, PLOT_W, PLOT_H)} />
    </g>
  )
}

function Bars({ chart, onHover }: { chart: PlacedBarChart; onHover: (hover?: Hover) => void }) {
  const groups = [...new Set(chart.elements.map((b) => b.group))]
  const { marks, xTicks, yTicks, references } = placeBars(chart, PLOT_W, PLOT_H)
  // E2B's x_* fields are the category axis's, which stands upright for horizontal bars.
  const horizontal = chart.orientation === 'horizontal'
  return (
    <g>
      <Axes
        x={xTicks}
        y={yTicks}
        xLabel={horizontal ? chart.y_label : chart.x_label}
        yLabel={horizontal ? chart.x_label : chart.y_label}
      />
      {marks.map(({ bar, x, y, width, height }, i) => {
        const text = `${groups.length > 1 ? `${bar.group} · ` : ''}${bar.label}: ${exact(bar.value)}`
        return (
          // biome-ignore lint/a11y/noStaticElementInteractions: as for the points, the Values tab is the accessible view
          <rect
            key={i}
            x={x}
            y={y}
            width={width}
            height={height}
            fill={COLORS[groups.indexOf(bar.group) % COLORS.length]}
            stroke={chart.histogram ? '#fff' : undefined}
            stroke-width={chart.histogram ? 0.5 : undefined}
            onMouseEnter={() => onHover({ x: x + width / 2 + MARGIN.left, y: y + MARGIN.top, text })}
            onMouseLeave={() => onHover(undefined)}
          />
        )
      })}
      <References segments={references} />
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
    case 'bar': {
      const columns = [
        'group',
        chart.x_label ?? (chart.histogram ? 'bin' : 'label'),
        chart.y_label ?? 'value',
      ]
      if (!barsPlaced(chart)) return { columns, rows: chart.elements.map((b) => [b.group, b.label, b.value]) }
      // Where each bar stands: a histogram's bin edges, a stacked bar's base.
      const based = chart.elements.some((b) => b.bottom !== 0)
      return {
        columns: [...columns, 'start', 'end', ...(based ? ['bottom'] : [])],
        rows: chart.elements.map((b) => [
          b.group,
          b.label,
          b.value,
          b.start,
          b.end,
          ...(based ? [b.bottom] : []),
        ]),
      }
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
    <ScrollBox class="table-wrap chart-table">
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
    </ScrollBox>
  )
}

function drawable(chart: Chart | undefined): boolean {
  if (chart?.type === 'bar') return barsPlaced(chart)
  return chart !== undefined && ['line', 'scatter', 'pie'].includes(chart.type)
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
              {chart.type === 'bar' && barsPlaced(chart) && <Bars chart={chart} onHover={setHover} />}
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
