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

export async function drawChart(
  element: HTMLElement,
  spec: VegaLiteSpec,
  options: { dark: boolean; description: string },
): Promise<DrawnChart> {
  const result = await embed(element, { description: options.description, ...spec } as VisualizationSpec, {
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
