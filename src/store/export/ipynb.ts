/**
 * A session as a Jupyter notebook (nbformat 4.5): each question as markdown, each step as a code
 * cell with its outputs (streams, results, charts, errors), each answer as markdown. The code reads
 * data/<name>: put the data files in a data/ folder next to the notebook.
 * @module
 */
import type { SessionHistory, StoredArtifact } from '../types.js'
import { specOf, VEGA_LITE_MIME } from './chart-spec.js'
import { queryLine, sessionSources, sourcesNote, sqlFunction } from './sql.js'

type Source = string[]

/** nbformat keeps multi-line strings as lists of lines, each with its newline. */
function lines(text: string): Source {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? []
}

/** Each language's kernelspec, as Jupyter names them (IRkernel's for R). */
const KERNELSPECS = {
  python: {
    kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' },
    language_info: { name: 'python' },
  },
  r: {
    kernelspec: { name: 'ir', display_name: 'R', language: 'R' },
    language_info: { name: 'R', file_extension: '.r', mimetype: 'text/x-r-source' },
  },
} as const

export function toNotebook(
  history: SessionHistory,
  image: (artifact: StoredArtifact) => Buffer | undefined,
  /** The language of the session's code: the notebook's kernel. @default 'python' */
  language: keyof typeof KERNELSPECS = 'python',
): object {
  const { session } = history
  const cells: object[] = []
  let counter = 0
  const id = () => `cell-${++counter}`
  const markdown = (text: string) => ({ cell_type: 'markdown', id: id(), metadata: {}, source: lines(text) })
  const files = history.datasets.map((d) => `- \`data/${d.name}\``).join('\n')
  cells.push(
    markdown(
      `# ${session.title}\n\nAnalyst session \`${session.id}\`. Data files (put them in a \`data/\` folder next to this notebook):\n\n${files || '- (none)'}\n`,
    ),
  )
  const sources = sessionSources(history)
  if (sources.length) {
    const note = sourcesNote(sources)
    cells.push(
      markdown(
        `${note[0]}\n\n${note
          .slice(1)
          .map((line) => `- \`${line.trim()}\``)
          .join('\n')}\n`,
      ),
    )
    cells.push({
      cell_type: 'code',
      id: id(),
      metadata: {},
      execution_count: null,
      source: lines(sqlFunction(sources)),
      outputs: [],
    })
  }
  let executionCount = 0
  for (const run of history.runs) {
    cells.push(markdown(`## ${run.question}\n`))
    for (const step of run.steps) {
      if (step.violations?.length) {
        const reasons = step.violations.map((v) => `- line ${v.line}: ${v.message}`).join('\n')
        cells.push(
          markdown(
            `*Step ${step.step} was not run: the guard stopped it.*\n\n${reasons}\n\n\`\`\`python\n${step.code}\n\`\`\`\n`,
          ),
        )
        continue
      }
      executionCount++
      const outputs: object[] = []
      if (step.stdout) outputs.push({ output_type: 'stream', name: 'stdout', text: lines(step.stdout) })
      if (step.stderr) outputs.push({ output_type: 'stream', name: 'stderr', text: lines(step.stderr) })
      for (const result of step.results) {
        const data: Record<string, unknown> = {}
        if (result.text !== undefined) data['text/plain'] = lines(result.text)
        const png = result.image ? image(result.image) : undefined
        if (png) data['image/png'] = png.toString('base64')
        // The chart's portable form beside its picture: JupyterLab draws it, others show the PNG.
        const spec = specOf(result.chart, result.chartEdit)
        if (spec) data[VEGA_LITE_MIME] = spec
        if (Object.keys(data).length === 0) continue
        outputs.push(
          result.isMainResult && !png
            ? { output_type: 'execute_result', execution_count: executionCount, data, metadata: {} }
            : { output_type: 'display_data', data, metadata: {} },
        )
      }
      // Stopped mid-way: as Jupyter shows an interrupted cell, after what it had shown by then.
      if (step.stopped && !step.error)
        outputs.push({
          output_type: 'error',
          ename: 'KeyboardInterrupt',
          evalue: step.stopped,
          traceback: [],
        })
      if (step.error) {
        outputs.push({
          output_type: 'error',
          ename: step.error.name,
          evalue: step.error.value,
          traceback: step.error.traceback.split('\n'),
        })
      }
      cells.push({
        cell_type: 'code',
        id: id(),
        metadata: step.queries?.length ? { analyst: { queries: step.queries } } : {},
        execution_count: executionCount,
        source: lines(step.code),
        outputs,
      })
      if (step.queries?.length) {
        const listed = step.queries.map(
          (query) =>
            `- ${queryLine(query)}\n\n  \`\`\`sql\n  ${query.query.split('\n').join('\n  ')}\n  \`\`\``,
        )
        cells.push(markdown(`${listed.join('\n')}\n`))
      }
    }
    if (run.answer) {
      const warning = run.unsupportedNumbers.length
        ? `\n\n> Not found in any output of the code: ${run.unsupportedNumbers.join(', ')}\n`
        : ''
      cells.push(markdown(`**Answer${run.incomplete ? ' (incomplete)' : ''}:**\n\n${run.answer}${warning}\n`))
    } else if (run.error) {
      cells.push(markdown(`*No answer: ${run.error}*\n`))
    }
  }
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      ...KERNELSPECS[language],
      analyst: { session: session.id, model: session.model ?? null },
    },
    cells,
  }
}
