/**
 * A person's edit of a chart (the web UI's chart type and titles), kept with the step's result:
 * `PUT /api/sessions/:id/runs/:runId/steps/:step/results/:index/chart`. The page draws it again
 * on reload, a shared page shows it, and the exports carry the edited Vega-Lite spec. The owner's
 * only, as every session route; an empty edit puts the chart back as it was drawn.
 * @module
 */
import { type Context, Hono } from 'hono'
import { z } from 'zod'
import { ConflictError, InvalidArgumentError, NotFoundError } from '../errors.js'
import { parseChart } from '../sandbox/charts.js'
import type { SessionService } from '../session/index.js'
import { chartMarks, drawable } from '../store/export/chart-spec.js'
import type { StoredChartEdit } from '../store/index.js'
import { jsonBody, parse } from './request-body.js'

const Title = z.string().max(500, 'a title is at most 500 characters')

const Edit = z
  .object({
    mark: z.enum(['bar', 'line', 'scatter', 'area']).optional(),
    title: Title.optional(),
    xTitle: Title.optional(),
    yTitle: Title.optional(),
  })
  .strict()

const position = (c: Context, name: string, first: number) => {
  const value = Number(c.req.param(name))
  if (!Number.isInteger(value) || value < first)
    throw new InvalidArgumentError(`${name} must be a whole number from ${first}`)
  return value
}

export function chartRoutes(options: {
  service: SessionService
  ownerOf: (c: Context) => string | null
}): Hono {
  const { service } = options
  const app = new Hono()
  app.put('/api/sessions/:id/runs/:runId/steps/:step/results/:index/chart', async (c) => {
    const session = await service.getSession(c.req.param('id') as string, options.ownerOf(c))
    const runId = c.req.param('runId') as string
    const number = position(c, 'step', 1)
    const index = position(c, 'index', 0)
    const edit: StoredChartEdit = parse(Edit, await jsonBody(c))
    const step = (await service.history.steps(session.id)).find(
      (stored) => stored.runId === runId && stored.step === number,
    )
    const result = step?.results[index]
    if (!step || !result) throw new NotFoundError(`No result ${index} of step ${number} in run ${runId}`)
    const chart = parseChart(result.chart)
    if (!chart || !drawable(chart))
      throw new ConflictError('This result has no chart drawn from its data to edit', {
        hint: 'Only a chart the page draws (with Chart, Values and Image) can be changed.',
      })
    const marks = chartMarks(chart)
    if (edit.mark && !marks.includes(edit.mark))
      throw new InvalidArgumentError(`This chart cannot be drawn as ${edit.mark}`, {
        hint: marks.length ? `Use one of: ${marks.join(', ')}.` : 'Leave its mark as it is.',
      })
    const kept = Object.keys(edit).length > 0 ? edit : undefined
    if (!(await service.history.setChartEdit(session.id, step.id, index, kept)))
      throw new NotFoundError(`No result ${index} of step ${number} in run ${runId}`)
    return c.json({ chartEdit: kept ?? null })
  })
  return app
}
