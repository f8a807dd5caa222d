/**
 * Where a chart's marks go, in SVG units: scales for numbers, dates and categories (linear or log,
 * as the figure's axes were), and each bar at its own extent and base, so that a histogram is drawn
 * with its bins and stacked or grouped bars as matplotlib placed them. No DOM: chart-view.tsx draws
 * what this computes.
 * @module
 */
import type { PlacedBar, PlacedBarChart, ReferenceLine } from '../sandbox/charts.js'

export interface Tick {
  pos: number
  label: string
}

export interface Scale {
  /** The position of a value along the axis; NaN for one the scale cannot place. */
  at(value: number | string): number
  ticks: Tick[]
}

const MAX_CATEGORY_TICKS = 20

const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumSignificantDigits: 4 })

/** A tick label: a few digits; large numbers short (10K, 2.5M). */
export function show(value: number | string): string {
  if (typeof value === 'string') return value
  if (Math.abs(value) >= 10_000 && Math.abs(value) < 1e15) return compact.format(value)
  if (Math.abs(value) >= 1e15 || (value !== 0 && Math.abs(value) < 1e-4)) return value.toExponential(1)
  if (Number.isInteger(value)) return String(value)
  return Number(value.toPrecision(5)).toString()
}

const isDate = (v: unknown) => typeof v === 'string' && !Number.isNaN(Date.parse(v))

/** Round numbers (1, 2 or 5 times a power of ten) across [min, max], about `count` of them. */
function niceTicks(min: number, max: number, count = 5): number[] {
  const raw = (max - min) / count
  const power = 10 ** Math.floor(Math.log10(raw))
  const step = ([1, 2, 5, 10].find((m) => m * power >= raw) ?? 10) * power
  const ticks: number[] = []
  for (let value = Math.ceil(min / step) * step; value <= max + step * 1e-9; value += step) {
    ticks.push(Math.abs(value) < step * 1e-9 ? 0 : Number(value.toPrecision(12)))
  }
  return ticks
}

const MINUTE = 60_000
const DAY = 86_400_000
/** Steps between date ticks: minutes to weeks in milliseconds, then months (negative: -n months). */
const DATE_STEPS = [
  MINUTE,
  5 * MINUTE,
  15 * MINUTE,
  60 * MINUTE,
  3 * 60 * MINUTE,
  6 * 60 * MINUTE,
  12 * 60 * MINUTE,
  DAY,
  2 * DAY,
  7 * DAY,
  14 * DAY,
  -1,
  -3,
  -6,
  -12,
  -24,
  -60,
  -120,
  -240,
  -600,
  -1200,
]

/** Whole minutes, days, weeks, months or years across [min, max] (UTC), at most `count` of them. */
function dateTicks(min: number, max: number, count = 6): Array<{ ms: number; label: string }> {
  const step =
    DATE_STEPS.find((s) => (s > 0 ? (max - min) / s : (max - min) / (-s * 30.44 * DAY)) <= count) ?? -12_000
  const ticks: number[] = []
  if (step > 0) {
    for (let ms = Math.ceil(min / step) * step; ms <= max; ms += step) ticks.push(ms)
  } else {
    const start = new Date(min)
    let month = start.getUTCFullYear() * 12 + start.getUTCMonth()
    month = Math.ceil(month / -step) * -step
    for (let ms = Date.UTC(Math.floor(month / 12), month % 12); ms <= max; ) {
      if (ms >= min) ticks.push(ms)
      month -= step
      ms = Date.UTC(Math.floor(month / 12), month % 12)
    }
  }
  const format = (ms: number) => {
    const iso = new Date(ms).toISOString()
    if (step > 0 && step < DAY) return iso.slice(0, 16).replace('T', ' ')
    return step <= -12 ? iso.slice(0, 4) : step < 0 ? iso.slice(0, 7) : iso.slice(0, 10)
  }
  return ticks.map((ms) => ({ ms, label: format(ms) }))
}

/**
 * A scale for values on one axis: numbers stay numbers (on a log scale when `log` and every value
 * is positive), dates become times, other strings categories in the order met. `flip` counts from
 * the far end (an upright axis). `include` widens the domain (a bar's base at 0); `pad` adds a
 * share of it at both ends, `headroom` at the top alone (above the tallest bar).
 */
export function scaleOf(
  values: Array<number | string>,
  length: number,
  { flip = false, log = false, include = [] as number[], pad = 0, headroom = 0 } = {},
): Scale {
  const dates = values.length > 0 && values.every(isDate)
  const categories = dates ? [] : [...new Set(values.filter((v) => typeof v === 'string'))]
  const numeric = (v: number | string) =>
    typeof v === 'number' ? v : dates ? Date.parse(v) : categories.indexOf(v)
  const all = [...values.map(numeric), ...include].filter(Number.isFinite)
  const logarithmic = log && categories.length === 0 && !dates && all.some((v) => v > 0)
  const kept = logarithmic ? all.filter((v) => v > 0) : all
  let min = Math.min(...kept)
  let max = Math.max(...kept)
  if (!Number.isFinite(min) || !Number.isFinite(max)) [min, max] = [0, 1]
  const scaled = (v: number) => (logarithmic ? Math.log10(v) : v)
  let low = scaled(min)
  let high = scaled(max)
  if (low === high) [low, high] = [low - 1, high + 1]
  const margin = (high - low) * pad
  ;[low, high] = [low - margin, high + margin + (high - low) * headroom]
  const place = (v: number) => {
    // A log axis starts at its lowest positive value: a bar from 0 is drawn from there.
    const share = (logarithmic && v <= 0 ? 0 : (scaled(v) - low) / (high - low)) * length
    return flip ? length - share : share
  }
  const at = (v: number | string) => place(numeric(v))
  let ticks: Tick[]
  if (categories.length > 0) {
    const every = Math.ceil(categories.length / MAX_CATEGORY_TICKS)
    ticks = categories.filter((_, i) => i % every === 0).map((label) => ({ pos: at(label), label }))
  } else if (dates) {
    ticks = dateTicks(low, high).map(({ ms, label }) => ({ pos: place(ms), label }))
  } else if (logarithmic && high - low >= 1) {
    ticks = []
    for (let e = Math.ceil(low); e <= Math.floor(high); e++)
      ticks.push({ pos: place(10 ** e), label: show(10 ** e) })
  } else {
    const inverse = (v: number) => (logarithmic ? 10 ** v : v)
    ticks = niceTicks(inverse(low), inverse(high)).map((v) => ({ pos: place(v), label: show(v) }))
  }
  return { at, ticks }
}

export interface BarMark {
  bar: PlacedBar
  /** The bar's rectangle in plot units (origin top left). */
  x: number
  y: number
  width: number
  height: number
}

export interface Segment {
  line: ReferenceLine
  x1: number
  y1: number
  x2: number
  y2: number
}

/** Where the values of the lines across a plot stand on each axis, to widen its domain by. */
export function referenceValues(lines: ReferenceLine[] = []): {
  x: Array<number | string>
  y: Array<number | string>
} {
  return {
    x: lines.filter((l) => l.orientation === 'vertical').map((l) => l.at),
    y: lines.filter((l) => l.orientation === 'horizontal').map((l) => l.at),
  }
}

/** Lines across the plot, from edge to edge, at their positions on the x (horizontal) and y scales. */
export function referenceSegments(
  lines: ReferenceLine[] = [],
  x: Scale,
  y: Scale,
  width: number,
  height: number,
): Segment[] {
  return lines
    .map((line) =>
      line.orientation === 'vertical'
        ? { line, x1: x.at(line.at), y1: 0, x2: x.at(line.at), y2: height }
        : { line, x1: 0, y1: y.at(line.at), x2: width, y2: y.at(line.at) },
    )
    .filter((segment) => [segment.x1, segment.y1].every(Number.isFinite))
}

export interface BarLayout {
  marks: BarMark[]
  /** Ticks along the bottom and the left edge. */
  xTicks: Tick[]
  yTicks: Tick[]
  references: Segment[]
}

/**
 * Each bar at its own extent on the category axis and from its base on the value axis. Named bars
 * (categories) get one tick per name, at the middle of its bars; others the axis's numbers or dates.
 */
export function placeBars(chart: PlacedBarChart, width: number, height: number): BarLayout {
  const horizontal = chart.orientation === 'horizontal'
  const [along, across] = horizontal ? [height, width] : [width, height]
  // The lines across the plot on each axis as drawn: x is the value axis of horizontal bars.
  const across_ = referenceValues(chart.reference_lines)
  const [onCategory, onValue] = horizontal ? [across_.y, across_.x] : [across_.x, across_.y]
  const edges = [...chart.elements.flatMap((b) => [b.start, b.end]), ...onCategory]
  const category = scaleOf(edges, along, { flip: horizontal, log: chart.x_scale === 'log', pad: 0.02 })
  const tops = chart.elements.map((b) => b.bottom + b.value)
  const value = scaleOf([...chart.elements.map((b) => b.bottom), ...tops, ...onValue], across, {
    flip: !horizontal,
    log: chart.y_scale === 'log',
    include: chart.y_scale === 'log' ? [] : [0],
    headroom: 0.05,
  })
  const marks = chart.elements.map((bar, i) => {
    const [a, b] = [category.at(bar.start), category.at(bar.end)]
    const [c, d] = [value.at(bar.bottom), value.at(tops[i] as number)]
    const rect = {
      along: Math.min(a, b),
      size: Math.abs(b - a),
      across: Math.min(c, d),
      extent: Math.abs(d - c),
    }
    return horizontal
      ? { bar, x: rect.across, y: rect.along, width: rect.extent, height: rect.size }
      : { bar, x: rect.along, y: rect.across, width: rect.size, height: rect.extent }
  })
  let categoryTicks = category.ticks
  if (chart.x_scale === 'categorical') {
    const centres = new Map<string, number[]>()
    for (const mark of marks) {
      const centre = horizontal ? mark.y + mark.height / 2 : mark.x + mark.width / 2
      centres.set(mark.bar.label, [...(centres.get(mark.bar.label) ?? []), centre])
    }
    const named = [...centres].map(([label, at]) => ({
      label,
      pos: at.reduce((s, v) => s + v, 0) / at.length,
    }))
    const every = Math.ceil(named.length / MAX_CATEGORY_TICKS)
    categoryTicks = named.filter((_, i) => i % every === 0)
  }
  const [x, y] = horizontal ? [value, category] : [category, value]
  const references = referenceSegments(chart.reference_lines, x, y, width, height)
  return horizontal
    ? { marks, xTicks: value.ticks, yTicks: categoryTicks, references }
    : { marks, xTicks: categoryTicks, yTicks: value.ticks, references }
}
