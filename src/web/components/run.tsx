/** One question and everything that answered it: the steps (code, output, tables, charts) and the answer. */
import { useState } from 'preact/hooks'
import type { ArtifactView } from '../../server/types.js'
import { queryLine } from '../../store/export/sql.js'
import { withToken } from '../api.js'
import { bytes, count, seconds } from '../format.js'
import { proseOf, type UiImage, type UiRun, type UiStep } from '../run-state.js'
import { Markdown } from './answer.js'
import { ChartView } from './chart-view.js'
import { Code } from './code.js'
import { DataTable } from './table.js'

function imageSrc(image: UiImage): string {
  return image.api ? withToken(image.src) : image.src
}

function isImage(artifact: ArtifactView): boolean {
  return /^image\/(png|jpeg|gif|webp|svg\+xml)$/.test(artifact.mimeType)
}

function Chart({ src, alt }: { src: string; alt: string }) {
  return (
    <figure class="chart">
      <img class="chart-image" src={src} alt={alt} loading="lazy" />
    </figure>
  )
}

function Files({ artifacts }: { artifacts: ArtifactView[] }) {
  if (artifacts.length === 0) return null
  return (
    <div class="files">
      {artifacts.map((artifact) => (
        <a
          key={artifact.name}
          class="file-chip"
          href={withToken(artifact.url)}
          download={artifact.name.split('/').pop()}
          title={`Download ${artifact.name}`}
        >
          <span class="file-icon" aria-hidden="true">
            ↓
          </span>
          {artifact.name}
          <span class="muted"> {bytes(artifact.size)}</span>
        </a>
      ))}
    </div>
  )
}

function summaryOf(step: UiStep): string {
  if (step.prose) return step.prose.split('\n')[0] ?? ''
  const comment = step.code.split('\n').find((line) => line.trim().startsWith('#'))
  if (comment) return comment.replace(/^\s*#+\s*/, '')
  return step.code.split('\n').find((line) => line.trim() !== '') ?? ''
}

function Step({ step, open: initiallyOpen }: { step: UiStep; open: boolean }) {
  const [open, setOpen] = useState(initiallyOpen)
  // Tables and charts are what a step is for: they show with the step closed too.
  const tables = step.results.flatMap((result) => (result.data && !result.image ? [result.data] : []))
  const images = step.results.filter((result) => result.image)
  // Charts saved to files show inline when the code displayed none itself.
  const imageFiles = images.length === 0 ? step.artifacts.filter(isImage) : []
  const status = step.running ? 'running' : step.violations?.length ? 'blocked' : step.error ? 'error' : 'ok'
  return (
    <section class={`step step-${status}`} aria-label={`Step ${step.step}`}>
      <button type="button" class="step-head" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span class="chevron" aria-hidden="true">
          {open ? '▾' : '▸'}
        </span>
        <span class="step-number">Step {step.step}</span>
        <span class="step-summary">{summaryOf(step)}</span>
        <span class="step-status">
          {status === 'running' && <span class="spinner" title="running" />}
          {status === 'blocked' && <span class="badge warn">blocked</span>}
          {status === 'error' && <span class="badge error">{step.error?.name ?? 'error'}</span>}
          {step.durationMs !== undefined && !step.running && (
            <span class="muted">{seconds(step.durationMs)}</span>
          )}
        </span>
      </button>
      {open && (
        <div class="step-body">
          {step.prose?.includes('\n') && <p class="prose">{step.prose}</p>}
          <Code code={step.code} />
          {step.queries?.map((query, index) => (
            <details key={index} class={`query${query.error ? ' failed' : ''}`}>
              <summary>{queryLine(query)}</summary>
              <pre class="output sql">{query.query}</pre>
            </details>
          ))}
          {step.violations && step.violations.length > 0 && (
            <ul class="violations">
              {step.violations.map((v) => (
                <li key={`${v.line}:${v.column}:${v.rule}`}>
                  line {v.line}:{v.column} <code>{v.rule}</code> {v.message}
                </li>
              ))}
            </ul>
          )}
          {step.stdout && <pre class="output stdout">{step.stdout}</pre>}
          {step.stderr && <pre class="output stderr">{step.stderr}</pre>}
          {step.results.map((result, index) =>
            result.image || result.data ? null : result.text !== undefined ? (
              <pre key={index} class="output result">
                {result.isMainResult && <span class="out-label">Out </span>}
                {result.text}
              </pre>
            ) : null,
          )}
          {step.error && (
            <pre class="output error">
              {step.error.traceback || `${step.error.name}: ${step.error.value}`}
            </pre>
          )}
        </div>
      )}
      {tables.length > 0 && (
        <div class="outputs">
          {tables.map((data, index) => (
            <DataTable key={index} data={data} />
          ))}
        </div>
      )}
      {images.map((result, index) => (
        <ChartView
          key={index}
          chart={result.chart}
          src={imageSrc(result.image as UiImage)}
          alt={(result.image as UiImage).alt}
        />
      ))}
      {imageFiles.map((artifact) => (
        <Chart key={artifact.name} src={withToken(artifact.url)} alt={artifact.name} />
      ))}
      <Files artifacts={step.artifacts} />
    </section>
  )
}

function phaseOf(run: UiRun): string {
  if (run.queued) return 'Waiting for the question before it to finish'
  const last = run.steps[run.steps.length - 1]
  const where = run.step ? `Step ${run.step}${run.maxSteps ? ` of ${run.maxSteps}` : ''} · ` : ''
  if (last?.running) return `${where}running the code`
  if (run.draft) return `${where}the model is writing`
  return `${where}waiting for the model`
}

export function Run({ run, live }: { run: UiRun; live: boolean }) {
  const draft = run.status === 'running' ? proseOf(run.draft) : ''
  return (
    <article class="run" aria-label={`Question: ${run.question}`}>
      <div class="question">
        <p>{run.question}</p>
      </div>
      {run.notice && (
        <p class="notice" role="status">
          {run.notice}
        </p>
      )}
      {run.steps.length > 0 && (
        <div class="steps">
          {run.steps.map((step) => (
            <Step key={step.step} step={step} open={live} />
          ))}
        </div>
      )}
      {draft && <div class="draft">{draft}</div>}
      {run.status === 'running' && !run.answer && (
        <div class="phase" role="status">
          <span class="spinner" aria-hidden="true" /> {phaseOf(run)}
        </div>
      )}
      {run.answer !== undefined && run.answer !== '' && (
        <section class="answer" aria-label="Answer">
          <Markdown text={run.answer} numbers={run.unsupportedNumbers} />
          {run.unsupportedNumbers.length > 0 && (
            <p class="note warn">
              <mark class="unsupported">Marked</mark>{' '}
              {run.unsupportedNumbers.length === 1 ? 'number was' : 'numbers were'} not found in any output of
              the code: check {run.unsupportedNumbers.length === 1 ? 'it' : 'them'} before you rely on{' '}
              {run.unsupportedNumbers.length === 1 ? 'it' : 'them'}.
            </p>
          )}
          {run.incomplete && (
            <p class="note">
              The analysis reached its step limit before a final answer; ask a follow-up to go on.
            </p>
          )}
          {run.totalTokens !== undefined && run.status !== 'running' && (
            <p class="meta">
              {run.steps.length} code step{run.steps.length === 1 ? '' : 's'} · {count(run.totalTokens)}{' '}
              tokens
            </p>
          )}
        </section>
      )}
      {(run.status === 'failed' || run.status === 'interrupted') && (
        <div class="alert" role="alert">
          <strong>{run.status === 'failed' ? 'The analysis failed' : 'The analysis was interrupted'}</strong>
          {run.error && <span>: {run.error}</span>}
          {run.hint && <p class="hint">{run.hint}</p>}
        </div>
      )}
    </article>
  )
}
