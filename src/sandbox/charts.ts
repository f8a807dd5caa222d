/**
 * `Result.chart`: the data behind a matplotlib figure, in the shapes (and snake_case field names)
 * of E2B's code interpreter (js/src/charts.ts), read defensively since it comes from the sandbox,
 * and summarized in a few lines for a model that cannot see the image. Analyst's extractor
 * (python/analyst_charts.py) adds fields, marked below, and changes none: what a chart needs to be
 * drawn as the figure is (a bar's extent and base, a histogram's bins). No Node imports: the web
 * UI uses it too.
 * @module
 */

export type ChartType = 'line' | 'scatter' | 'bar' | 'pie' | 'box_and_whisker' | 'superchart' | 'unknown'

interface ChartBase {
  title: string | null
}

interface Chart2D extends ChartBase {
  x_label: string | null
  y_label: string | null
  x_unit: string | null
  y_unit: string | null
}

export interface PointData {
  label: string
  points: Array<[number | string, number | string]>
  /** Added: drawn as markers with no line between them. */
  markers_only?: boolean
}

/** Added: a line across the whole plot at one position (matplotlib's axvline, axhline). */
export interface ReferenceLine {
  /** `vertical` stands at a position on the horizontal axis as drawn, `horizontal` on the upright one. */
  orientation: 'vertical' | 'horizontal'
  /** In the axis's units: a number, or an ISO date. */
  at: number | string
  label: string | null
}

export interface PointChart extends Chart2D {
  type: 'line' | 'scatter'
  x_ticks: Array<number | string>
  x_tick_labels: string[]
  x_scale: string
  y_ticks: Array<number | string>
  y_tick_labels: string[]
  y_scale: string
  /** Added. */
  reference_lines?: ReferenceLine[]
  elements: PointData[]
}

export interface BarData {
  /** The category at the bar's position, or the position itself (a histogram's bin: `[a, b)`). */
  label: string
  group: string
  /** The bar's height (its width, for horizontal bars): a stacked segment's own. */
  value: number
  /** Added: the bar's extent on the category axis, in its units (numbers, or ISO dates). */
  start?: number | string
  end?: number | string
  /** Added: where the bar starts on the value axis; it spans `bottom` to `bottom + value`. */
  bottom?: number
}

export interface BarChart extends Chart2D {
  type: 'bar'
  /** Added: `horizontal` puts the category axis upright. x_* fields are the category axis's. */
  orientation?: 'vertical' | 'horizontal'
  /** Added: scales of the category axis (`categorical`, `linear`, `datetime`, ...) and the value axis. */
  x_scale?: string
  y_scale?: string
  /** Added: the bars of each group tile their axis, as a histogram's bins. */
  histogram?: boolean
  /** Added. */
  reference_lines?: ReferenceLine[]
  elements: BarData[]
}

/** A bar with its extent and base, as Analyst's extractor gives every bar. */
export interface PlacedBar extends BarData {
  start: number | string
  end: number | string
  bottom: number
}

export interface PlacedBarChart extends BarChart {
  elements: PlacedBar[]
}

/**
 * Whether every bar has its own extent and base. Bars without (E2B's own extractor, which pairs
 * bars with tick labels by order) cannot be placed faithfully: draw the image instead.
 */
export function barsPlaced(chart: BarChart): chart is PlacedBarChart {
  return (
    chart.elements.length > 0 &&
    chart.elements.every((b) => b.start !== undefined && b.end !== undefined && b.bottom !== undefined)
  )
}

export interface PieData {
  label: string
  angle: number
  radius: number
}

export interface PieChart extends ChartBase {
  type: 'pie'
  elements: PieData[]
}

export interface BoxAndWhiskerData {
  label: string
  min: number
  first_quartile: number
  median: number
  third_quartile: number
  max: number
  outliers: number[]
  /** Added: where the box plot shows it (showmeans). */
  mean?: number
}

export interface BoxAndWhiskerChart extends Chart2D {
  type: 'box_and_whisker'
  elements: BoxAndWhiskerData[]
}

export interface SuperChart extends ChartBase {
  type: 'superchart'
  elements: Chart[]
}

export interface UnknownChart extends ChartBase {
  type: 'unknown'
  elements: unknown[]
}

export type Chart = PointChart | BarChart | PieChart | BoxAndWhiskerChart | SuperChart | UnknownChart

const TYPES = new Set<string>(['line', 'scatter', 'bar', 'pie', 'box_and_whisker', 'superchart', 'unknown'])

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

const isValue = (v: unknown): v is number | string => typeof v === 'number' || typeof v === 'string'

function validElement(type: ChartType, element: unknown): boolean {
  if (!isRecord(element)) return false
  switch (type) {
    case 'line':
    case 'scatter':
      return (
        Array.isArray(element.points) &&
        element.points.every((p) => Array.isArray(p) && p.length === 2 && isValue(p[0]) && isValue(p[1]))
      )
    case 'bar':
      return (
        typeof element.value === 'number' &&
        (element.start === undefined || isValue(element.start)) &&
        (element.end === undefined || isValue(element.end)) &&
        (element.bottom === undefined || typeof element.bottom === 'number')
      )
    case 'pie':
      return typeof element.angle === 'number'
    case 'box_and_whisker':
      return ['min', 'first_quartile', 'median', 'third_quartile', 'max'].every(
        (key) => typeof element[key] === 'number',
      )
    case 'superchart':
      return parseChart(element) !== undefined
    default:
      return true
  }
}

/** The chart in a result, when it has a shape that can be drawn; undefined otherwise. */
export function parseChart(value: unknown): Chart | undefined {
  if (!isRecord(value) || typeof value.type !== 'string' || !TYPES.has(value.type)) return undefined
  if (!Array.isArray(value.elements)) return undefined
  const type = value.type as ChartType
  if (!value.elements.every((element) => validElement(type, element))) return undefined
  if (type === 'bar' && !validBarFields(value)) return undefined
  if (value.reference_lines !== undefined && !validReferences(type, value.reference_lines)) return undefined
  return value as unknown as Chart
}

function validReferences(type: ChartType, lines: unknown): boolean {
  return (
    ['line', 'scatter', 'bar'].includes(type) &&
    Array.isArray(lines) &&
    lines.every(
      (line) =>
        isRecord(line) &&
        (line.orientation === 'vertical' || line.orientation === 'horizontal') &&
        isValue(line.at) &&
        (line.label === null || typeof line.label === 'string'),
    )
  )
}

/** The lines across a chart, as a line of its summary (or nothing). */
function describeReferences(chart: PointChart | BarChart): string {
  const lines = (chart.reference_lines ?? []).map(
    (line) => `${line.orientation} at ${format(line.at)}${line.label ? ` (${line.label})` : ''}`,
  )
  return lines.length > 0 ? `\n  lines across the plot: ${lines.join(', ')}` : ''
}

/** The chart-level fields Analyst adds to bar charts, when present, of their types. */
function validBarFields(chart: Record<string, unknown>): boolean {
  const optional = (key: string, check: (v: unknown) => boolean) =>
    chart[key] === undefined || check(chart[key])
  return (
    optional('orientation', (v) => v === 'vertical' || v === 'horizontal') &&
    optional('x_scale', (v) => typeof v === 'string') &&
    optional('y_scale', (v) => typeof v === 'string') &&
    optional('histogram', (v) => typeof v === 'boolean')
  )
}

function format(value: number | string): string {
  if (typeof value === 'string') return value
  if (Number.isInteger(value)) return String(value)
  return Number(value.toPrecision(4)).toString()
}

function axes(chart: Chart2D): string {
  const x = chart.x_label ? `x: ${chart.x_label}` : undefined
  const y = chart.y_label ? `y: ${chart.y_label}` : undefined
  return [x, y].filter(Boolean).join(', ')
}

/** ` (a; b)`, or nothing when every part is empty. */
function aside(parts: string[]): string {
  const kept = parts.filter(Boolean)
  return kept.length > 0 ? ` (${kept.join('; ')})` : ''
}

function numbers(values: Array<number | string>): number[] {
  return values.filter((v): v is number => typeof v === 'number')
}

/** A series in a line: its size, range, first and last points, and where it peaks. */
function describeSeries(series: PointData): string {
  const points = series.points
  if (points.length === 0) return `${series.label}: no points`
  const ys = numbers(points.map((p) => p[1]))
  const first = points[0] as [number | string, number | string]
  const last = points[points.length - 1] as [number | string, number | string]
  const parts = [
    `${series.label}: ${points.length} points`,
    `from (${format(first[0])}, ${format(first[1])})`,
  ]
  if (points.length > 1) parts.push(`to (${format(last[0])}, ${format(last[1])})`)
  if (ys.length > 0) {
    const max = Math.max(...ys)
    const min = Math.min(...ys)
    const at = (y: number) => format((points.find((p) => p[1] === y) as [number | string, number])[0])
    parts.push(`y from ${format(min)} (at x=${at(min)}) to ${format(max)} (at x=${at(max)})`)
  }
  return parts.join(', ')
}

/** Bins past this many are left out of a histogram's summary (said so). */
const MAX_BINS = 200

/**
 * A histogram: its bins (their range, and their width when they share one), how many values fell
 * in them, the fullest bin, and every count in order, so that a model reads the distribution drawn.
 */
function describeHistogram(chart: PlacedBarChart, title: string): string {
  const groups = [...new Set(chart.elements.map((b) => b.group))]
  const lines = groups.map((group) => {
    const bins = chart.elements.filter((b) => b.group === group)
    const first = bins[0] as PlacedBar
    const last = bins[bins.length - 1] as PlacedBar
    const widths = bins.map((b) =>
      typeof b.end === 'number' && typeof b.start === 'number' ? b.end - b.start : NaN,
    )
    const width = widths[0] as number
    const even = Number.isFinite(width) && widths.every((w) => Math.abs(w - width) <= 1e-9 * Math.abs(width))
    const counts = bins.map((b) => b.value)
    const whole = counts.every(Number.isInteger)
    const fullest = bins.reduce((best, b) => (b.value > best.value ? b : best), first)
    const shown = bins.slice(0, MAX_BINS)
    const list = even ? shown.map((b) => format(b.value)) : shown.map((b) => `${b.label} ${format(b.value)}`)
    const rest = bins.length > MAX_BINS ? `; … ${bins.length - MAX_BINS} more bins` : ''
    const parts = [
      `${bins.length} bins from ${format(first.start)} to ${format(last.end)}${even ? ` (each ${format(width)} wide)` : ''}`,
      whole ? `${counts.reduce((sum, c) => sum + c, 0)} values` : '',
      `the fullest ${fullest.label} (${format(fullest.value)})`,
    ]
    const head = parts.filter(Boolean).join(', ')
    return { head, counts: `${even ? 'counts' : 'bins'}: ${list.join(', ')}${rest}`, group }
  })
  const scale = chart.y_scale && chart.y_scale !== 'linear' ? `count scale ${chart.y_scale}` : ''
  const kind = `histogram${title}${aside([axes(chart), scale])}`
  if (lines.length === 1) {
    const only = lines[0] as (typeof lines)[number]
    return `${kind}: ${only.head}\n  ${only.counts}`
  }
  return [kind, ...lines.map((l) => `  ${l.group}: ${l.head}\n    ${l.counts}`)].join('\n')
}

/**
 * A few lines that say what a chart shows, with its values (the first `maxItems` of each list), so
 * that a model without vision can read what it plotted.
 */
export function summarizeChart(chart: Chart, maxItems = 12): string {
  const title = chart.title ? ` "${chart.title}"` : ''
  const more = (n: number) => (n > maxItems ? `; … ${n - maxItems} more` : '')
  switch (chart.type) {
    case 'line':
    case 'scatter': {
      const head = `${chart.type} chart${title} (${[axes(chart), `x scale ${chart.x_scale}`, `y scale ${chart.y_scale}`].filter(Boolean).join('; ')})`
      const series = chart.elements.slice(0, maxItems).map((s) => `  ${describeSeries(s)}`)
      return [head, ...series].join('\n') + more(chart.elements.length) + describeReferences(chart)
    }
    case 'bar': {
      if (chart.histogram && barsPlaced(chart))
        return describeHistogram(chart, title) + describeReferences(chart)
      const groups = new Set(chart.elements.map((b) => b.group))
      const bars = chart.elements
        .slice(0, maxItems)
        .map((b) => `${groups.size > 1 ? `${b.group} / ` : ''}${b.label}=${format(b.value)}`)
      const kind = chart.orientation === 'horizontal' ? 'horizontal bar chart' : 'bar chart'
      const scale = chart.y_scale && chart.y_scale !== 'linear' ? `value scale ${chart.y_scale}` : ''
      return `${kind}${title}${aside([axes(chart), scale])}: ${bars.join(', ')}${more(chart.elements.length)}${describeReferences(chart)}`
    }
    case 'pie': {
      const slices = chart.elements
        .slice(0, maxItems)
        .map((p) => `${p.label} ${format((p.angle / 360) * 100)}%`)
      return `pie chart${title}: ${slices.join(', ')}${more(chart.elements.length)}`
    }
    case 'box_and_whisker': {
      const boxes = chart.elements
        .slice(0, maxItems)
        .map(
          (b) =>
            `${b.label}: min ${format(b.min)}, q1 ${format(b.first_quartile)}, median ${format(b.median)}, q3 ${format(b.third_quartile)}, max ${format(b.max)}${b.mean === undefined ? '' : `, mean ${format(b.mean)}`}${b.outliers.length ? `, outliers ${b.outliers.map(format).join(' ')}` : ''}`,
        )
      return (
        [`box plot${title}${aside([axes(chart)])}`, ...boxes.map((b) => `  ${b}`)].join('\n') +
        more(chart.elements.length)
      )
    }
    case 'superchart':
      return [
        `figure${title} with ${chart.elements.length} charts:`,
        ...chart.elements.map((c) => summarizeChart(c, maxItems).replace(/^/gm, '  ')),
      ].join('\n')
    default:
      return `a figure${title} whose data cannot be read faithfully (not only lines, points, bars, wedges or boxes that a chart can hold)`
  }
}
