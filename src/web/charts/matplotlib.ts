/**
 * Copy as code: a chart's Vega-Lite spec (as chart-spec.ts makes it, a person's edits included)
 * back into a matplotlib cell that draws the same figure, so that the change becomes a step of
 * the analysis that the history, the exports and the model see. The values are written into the
 * cell: it runs in any kernel, whatever variables the figure came from. Pure: no DOM.
 * @module
 */
import type { VegaLiteSpec } from '../../store/export/chart-spec.js'

type Row = Record<string, unknown>
interface Channel {
  field?: string
  datum?: unknown
  type?: string
  title?: string | null
  scale?: { type?: string }
}
interface Unit {
  title?: unknown
  data?: { values?: Row[] }
  mark?: string | { type?: string; point?: boolean }
  encoding?: Record<string, Channel | undefined>
  layer?: Unit[]
  description?: string
}

/** A Python literal for a JSON value. */
function py(value: unknown): string {
  if (value === null || value === undefined) return 'None'
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : `float('${value}')`
  if (typeof value === 'boolean') return value ? 'True' : 'False'
  if (Array.isArray(value)) return `[${value.map(py).join(', ')}]`
  return JSON.stringify(String(value))
}

const isDate = (value: unknown) => typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value)

/** A list of values, dates as datetimes (matplotlib places them on a date axis). */
function list(values: unknown[]): string {
  if (values.length > 0 && values.every(isDate))
    return `[dt.datetime.fromisoformat(v) for v in ${py(values)}]`
  return py(values)
}

const markType = (unit: Unit) => (typeof unit.mark === 'string' ? unit.mark : unit.mark?.type)
const titleText = (title: unknown) =>
  typeof title === 'string'
    ? title
    : typeof title === 'object' && title
      ? (title as { text?: string }).text
      : undefined

/** Rows by series, in the order they come. */
function bySeries(rows: Row[], field: string | undefined): Array<[string | undefined, Row[]]> {
  if (!field) return [[undefined, rows]]
  const groups = new Map<string, Row[]>()
  for (const row of rows) {
    const key = String(row[field])
    groups.set(key, [...(groups.get(key) ?? []), row])
  }
  return [...groups]
}

const labelArg = (name: string | undefined) => (name === undefined ? '' : `, label=${py(name)}`)

/** Bars from the extents chart-spec.ts gives them (start, end, bottom): where matplotlib had them. */
function placedBars(
  ax: string,
  groups: Array<[string | undefined, Row[]]>,
  horizontal: boolean,
  named: boolean,
) {
  const lines: string[] = []
  const dates = isDate(groups[0]?.[1][0]?.start)
  for (const [name, rows] of groups) {
    const start = dates ? `mdates.datestr2num(${py(rows.map((r) => r.start))})` : py(rows.map((r) => r.start))
    const width = dates
      ? `mdates.datestr2num(${py(rows.map((r) => r.end))}) - ${start}`
      : py(rows.map((r) => Number(r.end) - Number(r.start)))
    const value = py(rows.map((r) => r.value))
    const bottom = py(rows.map((r) => r.bottom ?? 0))
    lines.push(
      horizontal
        ? `${ax}.barh(${start}, ${value}, height=${width}, left=${bottom}, align='edge'${labelArg(name)})`
        : `${ax}.bar(${start}, ${value}, width=${width}, bottom=${bottom}, align='edge'${labelArg(name)})`,
    )
  }
  if (dates) lines.push(`${ax}.${horizontal ? 'y' : 'x'}axis_date()`)
  if (named) {
    // Categories stand at their bars' middles.
    const ticks = new Map<number, string>()
    for (const [, rows] of groups)
      for (const r of rows) ticks.set((Number(r.start) + Number(r.end)) / 2, String(r.label))
    lines.push(
      `${ax}.set_${horizontal ? 'y' : 'x'}ticks(${py([...ticks.keys()])}, ${py([...ticks.values()])})`,
    )
  }
  return lines
}

/** Bars of points (a line or scatter shown as bars): side by side when there are several series. */
function pointBars(ax: string, groups: Array<[string | undefined, Row[]]>, x: string, y: string) {
  const categories = [...new Set(groups.flatMap(([, rows]) => rows.map((r) => r[x])))]
  const numeric = categories.every((c) => typeof c === 'number')
  if (groups.length === 1 && !numeric) {
    const rows = groups[0]?.[1] ?? []
    return [`${ax}.bar(${py(rows.map((r) => String(r[x])))}, ${py(rows.map((r) => r[y]))})`]
  }
  const width = 0.8 / groups.length
  const lines = groups.map(([name, rows], i) => {
    const positions = rows.map((r) => categories.indexOf(r[x]) + (i - (groups.length - 1) / 2) * width)
    return `${ax}.bar(${py(positions)}, ${py(rows.map((r) => r[y]))}, width=${width}${labelArg(name)})`
  })
  lines.push(`${ax}.set_xticks(${py(categories.map((_, i) => i))}, ${py(categories.map(String))})`)
  return lines
}

/** The statements that draw one axes, `ax`. */
function axesCode(unit: Unit, ax: string, inherited: Row[] = []): string[] {
  const rows = unit.data?.values ?? inherited
  const layers = unit.layer ?? [unit]
  const encodingOf = (layer: Unit) => ({ ...unit.encoding, ...layer.encoding })
  const lines: string[] = []
  const mainLayer = layers.find((l) => markType(l) !== 'rule') ?? layers[0] ?? unit
  const main = markType(mainLayer)
  const encoding = encodingOf(mainLayer)
  let xTitle = encoding.x?.title
  let yTitle = encoding.y?.title
  const series = encoding.color?.field
  const groups = bySeries(rows, main === 'arc' ? undefined : series)

  if (layers.some((l) => markType(l) === 'tick')) {
    // A box plot from its statistics.
    const stats = rows.map(
      (r) =>
        `{'label': ${py(r.label)}, 'whislo': ${py(r.min)}, 'q1': ${py(r.q1)}, 'med': ${py(r.median)}, 'q3': ${py(r.q3)}, 'whishi': ${py(r.max)}, 'fliers': []}`,
    )
    lines.push(`${ax}.bxp([\n    ${stats.join(',\n    ')},\n], showfliers=False)`)
    yTitle = layers.map((l) => encodingOf(l).y?.title).find((t) => typeof t === 'string') ?? yTitle
  } else if (main === 'arc') {
    const share = encoding.theta?.field ?? 'share'
    const label = encoding.color?.field ?? 'label'
    lines.push(`${ax}.pie(${py(rows.map((r) => r[share]))}, labels=${py(rows.map((r) => String(r[label])))})`)
    xTitle = undefined
    yTitle = undefined
  } else if (main === 'bar') {
    const horizontal = ['label', 'start', 'mid'].includes(encoding.y?.field ?? '')
    const cat = horizontal ? encoding.y : encoding.x
    if (rows.every((r) => r.start !== undefined && r.end !== undefined && r.value !== undefined))
      lines.push(...placedBars(ax, groups, horizontal, cat?.type === 'nominal'))
    else lines.push(...pointBars(ax, groups, encoding.x?.field ?? 'x', encoding.y?.field ?? 'y'))
  } else {
    const x = encoding.x?.field ?? 'x'
    const y = encoding.y?.field ?? 'y'
    const markers = typeof mainLayer.mark === 'object' && mainLayer.mark.point === true
    for (const [name, part] of groups) {
      const xs = list(part.map((r) => r[x]))
      const ys = py(part.map((r) => r[y]))
      if (main === 'point') lines.push(`${ax}.scatter(${xs}, ${ys}${labelArg(name)})`)
      else lines.push(`${ax}.plot(${xs}, ${ys}${markers ? ", marker='o'" : ''}${labelArg(name)})`)
      if (main === 'area') lines.push(`${ax}.fill_between(${xs}, ${ys}, alpha=0.3)`)
    }
  }
  for (const layer of layers) {
    if (markType(layer) !== 'rule' || layer === mainLayer) continue
    const e = encodingOf(layer)
    const [how, at] = e.x?.datum !== undefined ? ['axvline', e.x.datum] : ['axhline', e.y?.datum]
    if (at === undefined) continue
    const value = isDate(at) ? `dt.datetime.fromisoformat(${py(at)})` : py(at)
    lines.push(`${ax}.${how}(${value}, color='black', linestyle='--'${labelArg(layer.description)})`)
  }
  for (const axis of ['x', 'y'] as const) {
    const scale = encoding[axis]?.scale?.type
    if (scale === 'log' || scale === 'symlog') lines.push(`${ax}.set_${axis}scale(${py(scale)})`)
  }
  const title = titleText(unit.title)
  if (title) lines.push(`${ax}.set_title(${py(title)})`)
  if (typeof xTitle === 'string' && xTitle) lines.push(`${ax}.set_xlabel(${py(xTitle)})`)
  if (typeof yTitle === 'string' && yTitle) lines.push(`${ax}.set_ylabel(${py(yTitle)})`)
  if (groups.length > 1 && main !== 'arc') lines.push(`${ax}.legend()`)
  return lines
}

/** The matplotlib cell that draws the spec. */
export function matplotlibCell(spec: VegaLiteSpec): string {
  const top = spec as Unit & { concat?: Unit[]; columns?: number }
  const body: string[] = []
  if (Array.isArray(top.concat)) {
    const n = top.concat.length
    const columns = Math.min(top.columns ?? 2, n)
    const rows = Math.ceil(n / columns)
    body.push(
      `fig, axes = plt.subplots(${rows}, ${columns}, figsize=(${5 * columns}, ${4 * rows}), squeeze=False)`,
    )
    body.push('axes = axes.flatten()')
    top.concat.forEach((unit, i) => {
      body.push(...axesCode(unit, `axes[${i}]`, top.data?.values))
    })
    for (let i = n; i < rows * columns; i++) body.push(`fig.delaxes(axes[${i}])`)
    const title = titleText(top.title)
    if (title) body.push(`fig.suptitle(${py(title)})`)
  } else {
    body.push('fig, ax = plt.subplots()')
    body.push(...axesCode(top, 'ax'))
  }
  const code = body.join('\n')
  const imports = ['import matplotlib.pyplot as plt']
  if (code.includes('dt.datetime')) imports.unshift('import datetime as dt')
  if (code.includes('mdates.')) imports.push('import matplotlib.dates as mdates')
  return `${imports.join('\n')}\n\n${code}\nfig.tight_layout()\nplt.show()\n`
}
