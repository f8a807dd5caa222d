/**
 * A chart's portable form: the data behind a matplotlib figure (`Result.chart`, E2B's shapes) as a
 * Vega-Lite spec, the one the web UI draws (with vega-embed) and the exports carry (JupyterLab
 * renders it from an .ipynb). A person's edits (another mark, titles) are applied here, so what the
 * page shows, what it downloads and what Copy as code reads are the same spec. Pure, no DOM and no
 * Vega import: the spec is plain JSON, and the sandbox's data reaches it as values, never as
 * expressions.
 * @module
 */
import {
  barsPlaced,
  type Chart,
  type PointChart,
  parseChart,
  type ReferenceLine,
} from '../../sandbox/charts.js'
import type { StoredChartEdit } from '../types.js'

/** A Vega-Lite spec as JSON (the UI hands it to vega-embed; the exports write it). */
export type VegaLiteSpec = Record<string, unknown>

export const VEGA_LITE_SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json'
/** The MIME type of a Vega-Lite spec in a notebook (JupyterLab renders v5 and later under it). */
export const VEGA_LITE_MIME = 'application/vnd.vegalite.v6+json'

/** What a person changed: another mark, titles (an empty title hides it); kept with the result. */
export type ChartEdit = StoredChartEdit

/** The marks a person can switch a chart between. */
export type ChartMark = NonNullable<ChartEdit['mark']>

/** A chart's values as a table: for the Values view and the CSV download. */
export interface ChartTable {
  columns: Array<{ field: string; title: string }>
  rows: Array<Record<string, number | string>>
}

type FieldType = 'quantitative' | 'temporal' | 'ordinal' | 'nominal'

const HEIGHT = 280
/** Sub-charts of a figure with several axes: a fixed width, as `container` cannot be shared. */
const SUB_WIDTH = 300

const isDate = (value: unknown) => typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value)

/** How values lie on an axis: numbers, dates, or categories in the order given. */
function fieldType(values: Array<number | string>): FieldType {
  if (values.length > 0 && values.every((v) => typeof v === 'number')) return 'quantitative'
  if (values.length > 0 && values.every(isDate)) return 'temporal'
  return 'ordinal'
}

function scaleOf(scale: string | undefined, type: FieldType): Record<string, unknown> | undefined {
  if (type !== 'quantitative') return undefined
  if (scale === 'log' || scale === 'symlog') return { scale: { type: scale } }
  // Bars and areas start at zero; points and lines as the figure's limits were.
  return undefined
}

/** The value half-way between two positions (numbers or ISO dates). */
function middle(a: number | string, b: number | string): number | string {
  if (typeof a === 'number' && typeof b === 'number') return (a + b) / 2
  const [x, y] = [Date.parse(String(a)), Date.parse(String(b))]
  return Number.isNaN(x) || Number.isNaN(y) ? a : new Date((x + y) / 2).toISOString().replace(/\.000Z$/, '')
}

/** The marks a chart may be shown as; the first is its own. None: it is drawn only as it is. */
export function chartMarks(chart: Chart): ChartMark[] {
  switch (chart.type) {
    case 'line':
      return ['line', 'scatter', 'area', 'bar']
    case 'scatter':
      return ['scatter', 'line', 'area', 'bar']
    case 'bar':
      return barsPlaced(chart) ? ['bar', 'line', 'scatter', 'area'] : []
    default:
      return []
  }
}

/** Whether the chart can be drawn from its data (otherwise the image stands). */
export function drawable(chart: Chart | undefined): boolean {
  if (!chart) return false
  if (chart.type === 'bar') return barsPlaced(chart)
  if (chart.type === 'superchart') return chart.elements.length > 0 && chart.elements.every(drawable)
  return ['line', 'scatter', 'pie', 'box_and_whisker'].includes(chart.type)
}

/** Columns titled by their field's name. */
const titled = (...fields: string[]) => fields.map((field) => ({ field, title: field }))

/** Every value of the chart, with the columns' titles. */
export function chartTable(chart: Chart): ChartTable {
  switch (chart.type) {
    case 'line':
    case 'scatter':
      return {
        columns: [
          { field: 'series', title: 'series' },
          { field: 'x', title: chart.x_label || 'x' },
          { field: 'y', title: chart.y_label || 'y' },
        ],
        rows: chart.elements.flatMap((s) => s.points.map(([x, y]) => ({ series: s.label, x, y }))),
      }
    case 'bar': {
      const columns = [
        { field: 'series', title: 'group' },
        { field: 'label', title: chart.x_label || (chart.histogram ? 'bin' : 'label') },
        { field: 'value', title: chart.y_label || 'value' },
      ]
      if (!barsPlaced(chart))
        return {
          columns,
          rows: chart.elements.map((b) => ({ series: b.group, label: b.label, value: b.value })),
        }
      return {
        columns: [...columns, ...titled('start', 'end', 'bottom')],
        rows: chart.elements.map((b) => ({
          series: b.group,
          label: b.label,
          value: b.value,
          start: b.start,
          end: b.end,
          bottom: b.bottom,
          // For the marks: where the bar ends, and its middle (a line through bins).
          top: b.bottom + b.value,
          mid: middle(b.start, b.end),
        })),
      }
    }
    case 'pie': {
      const total = chart.elements.reduce((sum, p) => sum + p.angle, 0) || 1
      return {
        columns: [...titled('label'), { field: 'share', title: 'share %' }],
        rows: chart.elements.map((p) => ({
          label: p.label,
          share: Number(((p.angle / total) * 100).toPrecision(12)),
        })),
      }
    }
    case 'box_and_whisker':
      return {
        columns: [
          { field: 'label', title: chart.x_label || 'label' },
          ...titled('min', 'q1', 'median', 'q3', 'max'),
        ],
        rows: chart.elements.map((b) => ({
          label: b.label,
          min: b.min,
          q1: b.first_quartile,
          median: b.median,
          q3: b.third_quartile,
          max: b.max,
        })),
      }
    case 'superchart': {
      const parts = chart.elements.map((c, i) => ({
        name: c.title || `chart ${i + 1}`,
        table: chartTable(c),
      }))
      const fields = [...new Set(parts.flatMap((p) => p.table.columns.map((c) => c.field)))]
      return {
        columns: titled('chart', ...fields),
        rows: parts.flatMap((p) => p.table.rows.map((row) => ({ chart: p.name, ...row }))),
      }
    }
    default:
      return { columns: [], rows: [] }
  }
}

const titleOr = (edited: string | undefined, own: string | null | undefined) =>
  edited !== undefined ? edited || null : own || null

interface Channel {
  field: string
  type: FieldType | 'nominal'
  title?: string | null
  [key: string]: unknown
}

/** The mark as Vega-Lite names it, with hover tooltips on. */
function markOf(mark: ChartMark, markers: boolean): Record<string, unknown> {
  switch (mark) {
    case 'scatter':
      return { type: 'point', filled: true, tooltip: true }
    case 'line':
      return { type: 'line', point: markers, tooltip: true }
    case 'area':
      return { type: 'area', opacity: 0.5, line: true, tooltip: true }
    default:
      return { type: 'bar', tooltip: true }
  }
}

/**
 * Zoom and pan on the continuous axes (drag; the wheel with Ctrl or Cmd, or a trackpad's pinch;
 * double-click resets). A plain wheel scrolls the page or notebook the chart is in, instead of
 * stopping at each chart to zoom it.
 */
export const ZOOM_EVENT = 'wheel![event.ctrlKey || event.metaKey]'

/** A continuous channel and the values it shows (both ends of a bar), for its zoom's bounds. */
interface Zoomed {
  channel: Channel
  values: Array<number | string>
  /** The axis starts at zero (a bar's or an area's values; a line's, as Vega-Lite draws it). */
  zero: boolean
}

const isContinuous = (channel: Channel | undefined): channel is Channel =>
  channel?.type === 'quantitative' || channel?.type === 'temporal'

/** The values' extent (dates as epoch ms, read as Vega reads them: Date.parse); none when flat. */
function extentOf(values: Array<number | string>, zero: boolean): [number, number] | undefined {
  let lo = zero ? 0 : Number.POSITIVE_INFINITY
  let hi = zero ? 0 : Number.NEGATIVE_INFINITY
  for (const value of values) {
    const at = typeof value === 'number' ? value : Date.parse(value)
    if (!Number.isFinite(at)) continue
    lo = Math.min(lo, at)
    hi = Math.max(hi, at)
  }
  return lo < hi ? [lo, hi] : undefined
}

/**
 * Zoom and pan on the chart's continuous axes, kept within its data. Vega-Lite's scales binding
 * has no bound of its own (it clamps a brush to the view, never a zoom: its zoom.ts and
 * translate.ts), so each such axis's scale takes the selection's extent through `clampRange` to
 * the data's extent (domainRaw, which the binding would set to the bare extent), and is drawn
 * without nice rounding, so that the first view is that extent and the first drag does not jump.
 * The bounds are numbers made here, never the data's text.
 */
function zoom(
  name: string,
  axes: Partial<Record<'x' | 'y', Zoomed>>,
  lines: ReferenceLine[] = [],
): Array<Record<string, unknown>> {
  const continuous = (['x', 'y'] as const).filter((c) => isContinuous(axes[c]?.channel))
  for (const c of continuous) {
    const { channel, values, zero } = axes[c] as Zoomed
    // The reference lines are drawn on the same scale: within the bounds too.
    const across = c === 'x' ? 'vertical' : 'horizontal'
    for (const line of lines) if (line.orientation === across) values.push(line.at)
    const log =
      channel.type === 'quantitative' && /log/.test(String((channel.scale as { type?: string })?.type))
    const extent = extentOf(values, zero && !log)
    if (!extent) continue
    const extentOfZoom = `${name}[${JSON.stringify(channel.field)}]`
    channel.scale = {
      ...(channel.scale as Record<string, unknown> | undefined),
      ...(channel.type === 'quantitative' && !log ? { zero: zero } : {}),
      nice: false,
      domainRaw: {
        expr: `${extentOfZoom} ? clampRange(${extentOfZoom}, ${extent[0]}, ${extent[1]}) : null`,
      },
    }
  }
  return continuous.length
    ? [{ name, select: { type: 'interval', encodings: continuous, zoom: ZOOM_EVENT }, bind: 'scales' }]
    : []
}

function tooltip(channels: Array<Channel | undefined>): Array<Record<string, unknown>> {
  return channels
    .filter((c): c is Channel => c !== undefined)
    .map((c) => ({ field: c.field, type: c.type, title: c.title ?? c.field }))
}

function referenceLayers(lines: ReferenceLine[] | undefined, x: Channel, y: Channel) {
  return (lines ?? []).flatMap((line) => {
    const axis = line.orientation === 'vertical' ? x : y
    // A category axis has no place for a position between its categories.
    if (axis.type !== 'quantitative' && axis.type !== 'temporal') return []
    const channel = line.orientation === 'vertical' ? 'x' : 'y'
    return [
      {
        mark: { type: 'rule', strokeDash: [5, 4] },
        encoding: { [channel]: { datum: line.at, type: axis.type } },
        ...(line.label ? { description: line.label } : {}),
      },
    ]
  })
}

/** A line or scatter chart, or bars shown as points. */
function pointSpec(chart: PointChart, edit: ChartEdit, name: string): VegaLiteSpec {
  const { rows } = chartTable(chart)
  const mark = edit.mark ?? (chart.type === 'scatter' ? 'scatter' : 'line')
  const xType = fieldType(rows.map((r) => r.x as number | string))
  const x: Channel = {
    field: 'x',
    type: mark === 'bar' && xType === 'quantitative' ? 'ordinal' : xType,
    title: titleOr(edit.xTitle, chart.x_label),
    ...(xType === 'ordinal' ? { sort: null } : {}),
    ...scaleOf(chart.x_scale, xType),
  }
  const y: Channel = {
    field: 'y',
    type: fieldType(rows.map((r) => r.y as number | string)),
    title: titleOr(edit.yTitle, chart.y_label),
    ...scaleOf(chart.y_scale, 'quantitative'),
    ...(mark === 'area' ? { stack: null } : {}),
  }
  const series: Channel | undefined =
    chart.elements.length > 1 ? { field: 'series', type: 'nominal', title: null, sort: null } : undefined
  const markers = chart.type === 'line' && chart.elements.some((s) => s.markers_only)
  const encoding = { x, y, ...(series ? { color: series } : {}) }
  const main = {
    params: zoom(
      name,
      {
        x: { channel: x, values: rows.map((r) => r.x as number | string), zero: false },
        y: { channel: y, values: rows.map((r) => r.y as number | string), zero: true },
      },
      chart.reference_lines,
    ),
    mark: markOf(mark, markers),
    encoding: {
      ...encoding,
      ...(mark === 'bar' && series ? { xOffset: { field: 'series', sort: null } } : {}),
      tooltip: tooltip([series, x, y]),
    },
  }
  return { data: { values: rows }, layer: [main, ...referenceLayers(chart.reference_lines, x, y)] }
}

/** Bars at their own extents and bases (a histogram's bins, stacks, groups), or their values as points. */
function barSpec(chart: Extract<Chart, { type: 'bar' }>, edit: ChartEdit, name: string): VegaLiteSpec {
  const { rows } = chartTable(chart)
  const mark = edit.mark ?? 'bar'
  const categorical = chart.x_scale === 'categorical'
  // Lines and points through bars run left to right, whichever way the bars stood.
  const horizontal = chart.orientation === 'horizontal' && mark === 'bar'
  const groups = new Set(rows.map((r) => r.series)).size
  const stacked = rows.some((r) => r.bottom !== 0)
  const positions = rows.map((r) => r.start as number | string)
  const placeType = categorical ? 'nominal' : fieldType(positions)
  const catTitle = titleOr(edit.xTitle, chart.x_label)
  const valueTitle = titleOr(edit.yTitle, chart.y_label)
  let cat: Channel
  let cat2: Record<string, unknown> | undefined
  if (categorical) cat = { field: 'label', type: 'nominal', title: catTitle, sort: null }
  else if (mark === 'bar') {
    cat = {
      field: 'start',
      type: placeType as FieldType,
      title: catTitle,
      ...scaleOf(chart.x_scale, placeType),
    }
    cat2 = { field: 'end' }
  } else
    cat = {
      field: 'mid',
      type: placeType as FieldType,
      title: catTitle,
      ...scaleOf(chart.x_scale, placeType),
    }
  const value: Channel = {
    field: mark === 'bar' ? 'top' : 'value',
    type: 'quantitative',
    title: valueTitle,
    ...scaleOf(chart.y_scale, 'quantitative'),
    ...(mark === 'area' ? { stack: null } : {}),
  }
  const value2 = mark === 'bar' ? { field: 'bottom' } : undefined
  const series: Channel | undefined =
    groups > 1 ? { field: 'series', type: 'nominal', title: null, sort: null } : undefined
  const [xc, yc] = horizontal ? (['y', 'x'] as const) : (['x', 'y'] as const)
  const encoding: Record<string, Channel | undefined> = { [xc]: cat, [yc]: value }
  const field = (name: string) => rows.map((r) => r[name] as number | string)
  const main = {
    params: zoom(
      name,
      {
        [xc]: {
          channel: cat,
          values: cat2 ? [...field('start'), ...field('end')] : field(cat.field),
          zero: false,
        },
        [yc]: {
          channel: value,
          values: value2 ? [...field('top'), ...field('bottom')] : field('value'),
          zero: true,
        },
      },
      chart.reference_lines,
    ),
    mark: markOf(mark, false),
    encoding: {
      ...encoding,
      ...(cat2 ? { [`${xc}2`]: cat2 } : {}),
      ...(value2 ? { [`${yc}2`]: value2 } : {}),
      ...(series ? { color: series } : {}),
      // Grouped bars side by side, as matplotlib placed them (stacks keep their bases).
      ...(mark === 'bar' && categorical && series && !stacked
        ? { [`${xc}Offset`]: { field: 'series', sort: null } }
        : {}),
      tooltip: tooltip([
        series,
        { field: 'label', type: 'nominal', title: catTitle || 'label' },
        { ...value, field: 'value' },
      ]),
    },
  }
  const drawn = { x: (horizontal ? value : cat) as Channel, y: (horizontal ? cat : value) as Channel }
  return {
    data: { values: rows },
    layer: [main, ...referenceLayers(chart.reference_lines, drawn.x, drawn.y)],
  }
}

function pieSpec(chart: Extract<Chart, { type: 'pie' }>, edit: ChartEdit): VegaLiteSpec {
  const { rows } = chartTable(chart)
  const label: Channel = {
    field: 'label',
    type: 'nominal',
    title: titleOr(edit.xTitle, null) ?? 'label',
    sort: null,
  }
  const share: Channel = {
    field: 'share',
    type: 'quantitative',
    title: titleOr(edit.yTitle, null) ?? 'share %',
  }
  return {
    data: { values: rows },
    mark: { type: 'arc', tooltip: true },
    encoding: {
      theta: { ...share, stack: true },
      color: label,
      order: { field: '__order' },
      tooltip: tooltip([label, share]),
    },
    transform: [{ window: [{ op: 'row_number', as: '__order' }] }],
  }
}

function boxSpec(chart: Extract<Chart, { type: 'box_and_whisker' }>, edit: ChartEdit): VegaLiteSpec {
  const { rows } = chartTable(chart)
  const label: Channel = {
    field: 'label',
    type: 'nominal',
    title: titleOr(edit.xTitle, chart.x_label),
    sort: null,
  }
  const title = titleOr(edit.yTitle, chart.y_label)
  const q = (field: string): Channel => ({ field, type: 'quantitative', title: field })
  const tip = tooltip([label, q('min'), q('q1'), q('median'), q('q3'), q('max')])
  return {
    data: { values: rows },
    encoding: { x: label },
    layer: [
      {
        mark: { type: 'rule', tooltip: true },
        encoding: { y: { ...q('min'), title }, y2: { field: 'max' }, tooltip: tip },
      },
      {
        mark: { type: 'bar', size: 24, tooltip: true },
        encoding: { y: q('q1'), y2: { field: 'q3' }, tooltip: tip },
      },
      {
        mark: { type: 'tick', size: 24, color: 'white', tooltip: true },
        encoding: { y: q('median'), tooltip: tip },
      },
    ],
  }
}

/** The spec of one axes (no schema, no size). */
function unitSpec(chart: Chart, edit: ChartEdit, name: string): VegaLiteSpec | undefined {
  if (!drawable(chart)) return undefined
  const title = titleOr(edit.title, chart.title)
  const body =
    chart.type === 'line' || chart.type === 'scatter'
      ? pointSpec(chart, edit, name)
      : chart.type === 'bar'
        ? barSpec(chart, edit, name)
        : chart.type === 'pie'
          ? pieSpec(chart, edit)
          : chart.type === 'box_and_whisker'
            ? boxSpec(chart, edit)
            : undefined
  return body && { ...(title ? { title } : {}), ...body }
}

/**
 * The chart as a Vega-Lite spec, with a person's edits; undefined for a chart that cannot be drawn
 * from its data (its image stands). A figure with several axes becomes their concatenation (the
 * edits of a single chart do not apply to it).
 */
export function chartSpec(chart: Chart, edit: ChartEdit = {}): VegaLiteSpec | undefined {
  if (chart.type === 'superchart') {
    if (!drawable(chart)) return undefined
    const parts = chart.elements.map((c, i) => ({
      width: SUB_WIDTH,
      height: HEIGHT * 0.8,
      ...unitSpec(c, {}, `zoom${i}`),
    }))
    const title = titleOr(edit.title, chart.title)
    return { $schema: VEGA_LITE_SCHEMA, ...(title ? { title } : {}), columns: 2, concat: parts }
  }
  const unit = unitSpec(chart, edit, 'zoom')
  return unit && { $schema: VEGA_LITE_SCHEMA, width: 'container', height: HEIGHT, ...unit }
}

/**
 * The spec of a stored result's chart data (untrusted: read through parseChart), with the edit a
 * person kept with it, if it can be drawn.
 */
export function specOf(chart: unknown, edit?: ChartEdit): VegaLiteSpec | undefined {
  const parsed = parseChart(chart)
  return parsed && chartSpec(parsed, edit)
}
