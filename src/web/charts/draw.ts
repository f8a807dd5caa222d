/**
 * Draws a Vega-Lite spec with vega-embed: the one module that imports Vega, loaded (as its own
 * chunk) when the first chart is shown, so that a page without charts never fetches it.
 * Expressions run through vega-interpreter rather than `new Function`: the page needs no
 * 'unsafe-eval' and can keep a strict Content-Security-Policy. Tooltips (vega-tooltip) escape the
 * sandbox's labels.
 * @module
 */
import embed, { type VisualizationSpec } from 'vega-embed'
import { expressionInterpreter } from 'vega-interpreter'
import type { VegaLiteSpec } from '../../store/export/chart-spec.js'

export interface DrawnChart {
  /** The picture as a data (PNG) or blob (SVG) URL, for a download. */
  image(format: 'png' | 'svg'): Promise<string>
  finalize(): void
}

/** Colours that follow the page's own (style.css) in either theme; the background stays the page's. */
function config(dark: boolean) {
  const text = dark ? '#e4e6e9' : '#1f2328'
  const grid = dark ? '#3a3f46' : '#cfcfc8'
  return {
    background: 'transparent',
    font: 'system-ui, sans-serif',
    title: { color: text, fontSize: 14 },
    axis: { labelColor: text, titleColor: text, gridColor: grid, domainColor: grid, tickColor: grid },
    legend: { labelColor: text, titleColor: text },
    view: { stroke: null },
    rule: { color: text },
  }
}

/**
 * The wheel zooms a chart only with Ctrl or Cmd held (a trackpad's pinch sends it so): without it,
 * a person scrolling down the conversation would stop at each chart and zoom it instead. Set on
 * the page's copy only; the spec (the chart's portable form, in the exports) keeps Vega-Lite's default.
 */
const ZOOM = 'wheel![event.ctrlKey || event.metaKey]'

function zoomWithModifier(spec: unknown): unknown {
  if (Array.isArray(spec)) return spec.map(zoomWithModifier)
  if (spec === null || typeof spec !== 'object') return spec
  const node = spec as Record<string, unknown>
  // The rows (`data`, `datasets`) are copied as they are: they may be many, and hold no params.
  const zoomed = Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      key === 'data' || key === 'datasets' ? value : zoomWithModifier(value),
    ]),
  )
  if (node.bind === 'scales' && node.select && typeof node.select === 'object')
    zoomed.select = { ...(node.select as object), zoom: ZOOM }
  return zoomed
}

export async function drawChart(
  element: HTMLElement,
  spec: VegaLiteSpec,
  options: { dark: boolean; description: string },
): Promise<DrawnChart> {
  const shown = zoomWithModifier({ description: options.description, ...spec })
  const result = await embed(element, shown as VisualizationSpec, {
    actions: false,
    renderer: 'svg',
    ast: true,
    expr: expressionInterpreter,
    ...(options.dark ? { theme: 'dark' as const } : {}),
    config: config(options.dark),
    tooltip: { theme: options.dark ? 'dark' : 'light' },
  })
  return {
    // The PNG at twice the size, sharp on a high-density screen and in a document.
    image: (format) => result.view.toImageURL(format, format === 'png' ? 2 : 1),
    finalize: () => result.finalize(),
  }
}
