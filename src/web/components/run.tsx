/** One question and everything that answered it: the steps (code, output, tables, charts) and the answer. */
import { useEffect, useRef, useState } from 'preact/hooks'
import type { Violation } from '../../agent/events.js'
import { type ArtifactView, PERSON_CELL } from '../../server/types.js'
import type { ChartEdit } from '../../store/export/chart-spec.js'
import { queryLine } from '../../store/export/sql.js'
import { withToken } from '../api.js'
import { bytes, count, seconds } from '../format.js'
import { errorNote, proseOf, type UiImage, type UiRun, type UiStep } from '../run-state.js'
import { Markdown } from './answer.js'
import { ChartView } from './chart-view.js'
import { Code } from './code.js'
import { CodeEditor, type CodeEditorHandle } from './code-editor.js'
import { FrameGrid } from './frame-grid.js'
import { ScrollBox } from './scroll-box.js'
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

/** How a person's cell went, as the step that was edited shows it. */
export interface CellOutcome {
  violations: Violation[]
  error?: { name: string; value: string }
  /** It did not finish: stopped, or the request failed (the message says which). */
  problem?: string
  /** How many cells ran (Run below runs several). */
  ran: number
}

/**
 * What a person may do with a step: run its code edited, or run it and every later step; keep a
 * chart's edit with its result.
 */
export interface StepActions {
  /** The owner's session: its kernel's tables can be paged. */
  sessionId: string
  run(code: string): Promise<CellOutcome>
  runBelow(code: string): Promise<CellOutcome>
  /** Keeps the edit of the chart of the step's result `index`. */
  keepChart(index: number, edit: ChartEdit): Promise<void>
}

function Violations({ violations }: { violations: Violation[] }) {
  return (
    <ul class="violations">
      {violations.map((v) => (
        <li key={`${v.line}:${v.column}:${v.rule}`}>
          line {v.line}:{v.column} <code>{v.rule}</code> {v.message}
        </li>
      ))}
    </ul>
  )
}

function Outcome({ outcome }: { outcome: CellOutcome }) {
  if (outcome.violations.length > 0)
    return (
      <div class="cell-outcome blocked" role="alert">
        <strong>The guard refused this cell; nothing ran.</strong>
        <Violations violations={outcome.violations} />
      </div>
    )
  if (outcome.error)
    return (
      <div class="cell-outcome error" role="alert">
        <strong>
          {outcome.error.name}: {outcome.error.value}
        </strong>
        {outcome.ran > 1 && <span> (cell {outcome.ran}; the cells after it did not run)</span>}
      </div>
    )
  if (outcome.problem)
    return (
      <div class="cell-outcome error" role="alert">
        {outcome.problem}
      </div>
    )
  return (
    <p class="cell-outcome ok" role="status">
      Ran {outcome.ran === 1 ? 'as a new cell' : `${outcome.ran} cells`}: the output is at the end of the
      conversation.
    </p>
  )
}

/** The code of a step: read, or (with actions) edited and run again. */
function StepCode({ step, actions }: { step: UiStep; actions?: StepActions }) {
  const [editing, setEditing] = useState(false)
  const [busy, setBusy] = useState(false)
  const [outcome, setOutcome] = useState<CellOutcome | null>(null)
  const editor = useRef<CodeEditorHandle | null>(null)
  if (!actions || !editing)
    return (
      <div class="step-code">
        <Code code={step.code} />
        {actions && (
          <button type="button" class="button secondary small edit" onClick={() => setEditing(true)}>
            Edit
          </button>
        )}
      </div>
    )
  const go = async (how: 'run' | 'runBelow') => {
    if (busy) return
    const code = editor.current?.text() ?? step.code
    setBusy(true)
    setOutcome(null)
    try {
      setOutcome(await actions[how](code))
    } finally {
      setBusy(false)
    }
  }
  return (
    <div class="step-code editing">
      <CodeEditor
        code={step.code}
        label={`Code of step ${step.step}`}
        autoFocus
        handle={editor}
        onRun={() => void go('run')}
      />
      <div class="editor-actions">
        <button type="button" class="button small" disabled={busy} onClick={() => void go('run')}>
          Run <kbd>Ctrl+Enter</kbd>
        </button>
        <button
          type="button"
          class="button secondary small"
          disabled={busy}
          onClick={() => void go('runBelow')}
        >
          Run below
        </button>
        <button
          type="button"
          class="button secondary small"
          disabled={busy}
          onClick={() => {
            setEditing(false)
            setOutcome(null)
          }}
        >
          Done
        </button>
        {busy && (
          <span class="muted" role="status">
            <span class="spinner" aria-hidden="true" /> running… (Esc stops it)
          </span>
        )}
      </div>
      {outcome && <Outcome outcome={outcome} />}
    </div>
  )
}

function Step({
  step,
  open: initiallyOpen,
  actions,
  reveal,
}: {
  step: UiStep
  open: boolean
  actions?: StepActions
  /** Set (a new number each time) when find goes to a match in this step: it opens. */
  reveal?: number
}) {
  const [open, setOpen] = useState(initiallyOpen)
  useEffect(() => {
    if (reveal) setOpen(true)
  }, [reveal])
  // Tables and charts are what a step is for: they show with the step closed too.
  const tables = step.results.filter((result) => result.data && !result.image)
  // The expression a main result came from, for the grid's Copy as code.
  const lastLine =
    step.code
      .split('\n')
      .filter((line) => line.trim() !== '')
      .pop() ?? ''
  const images = step.results.filter((result) => result.image)
  // Charts saved to files show inline when the code displayed none itself.
  const imageFiles = images.length === 0 ? step.artifacts.filter(isImage) : []
  const status = step.running
    ? 'running'
    : step.stopped
      ? 'stopped'
      : step.violations?.length
        ? 'blocked'
        : step.error
          ? 'error'
          : 'ok'
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
          {status === 'stopped' && <span class="badge warn">stopped</span>}
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
          <StepCode step={step} actions={actions} />
          {step.queries?.map((query, index) => (
            <details key={index} class={`query${query.error ? ' failed' : ''}`}>
              <summary>{queryLine(query)}</summary>
              <ScrollBox class="output sql" pre>
                {query.query}
              </ScrollBox>
            </details>
          ))}
          {step.violations && step.violations.length > 0 && <Violations violations={step.violations} />}
          {step.stdout && (
            <ScrollBox class="output stdout" pre>
              {step.stdout}
            </ScrollBox>
          )}
          {step.stderr && (
            <ScrollBox class="output stderr" pre>
              {step.stderr}
            </ScrollBox>
          )}
          {step.results.map((result, index) =>
            result.image || result.data ? null : result.text !== undefined ? (
              <ScrollBox key={index} class="output result" pre>
                {result.isMainResult && <span class="out-label">Out </span>}
                {result.text}
              </ScrollBox>
            ) : null,
          )}
          {step.error && (
            <ScrollBox class="output error" pre>
              {step.error.traceback || `${step.error.name}: ${step.error.value}`}
            </ScrollBox>
          )}
          {step.error && errorNote(step.error) && <p class="note warn">{errorNote(step.error)}</p>}
        </div>
      )}
      {tables.length > 0 && (
        <div class="outputs">
          {tables.map((result, index) =>
            actions && result.frame ? (
              <FrameGrid
                key={result.frame.id}
                sessionId={actions.sessionId}
                frame={result.frame}
                source={result.isMainResult ? lastLine : '_'}
                onRunAgain={() => void actions.run(step.code)}
              />
            ) : (
              <DataTable key={index} data={result.data as Record<string, unknown[]>} />
            ),
          )}
        </div>
      )}
      {images.map((result, index) => (
        <ChartView
          key={index}
          chart={result.chart}
          src={imageSrc(result.image as UiImage)}
          alt={(result.image as UiImage).alt}
          kept={result.chartEdit}
          onKeep={actions && ((edit) => actions.keepChart(step.results.indexOf(result), edit))}
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

export function Run({
  run,
  live,
  actions,
  onFollowUp,
  reveal,
}: {
  run: UiRun
  live: boolean
  /** The step find goes to (its index in the run's steps), and a new number each time. */
  reveal?: { step: number; nonce: number }
  /** What a person may do with each step (none on a shared page or while it runs). */
  actions?: (step: UiStep, run: UiRun) => StepActions
  /** Asks a suggested follow-up (only under the last answer, when a question may be asked). */
  onFollowUp?: (question: string) => void
}) {
  const draft = run.status === 'running' ? proseOf(run.draft) : ''
  const person = run.question === PERSON_CELL
  return (
    <article
      class={`run${person ? ' person' : ''}`}
      aria-label={person ? 'A cell you ran' : `Question: ${run.question}`}
    >
      <div class="question">
        <p>{person ? 'You ran a cell' : run.question}</p>
      </div>
      {run.notice && (
        <p class="notice" role="status">
          {run.notice}
        </p>
      )}
      {run.steps.length > 0 && (
        <div class="steps">
          {run.steps.map((step, index) => (
            <Step
              key={step.step}
              step={step}
              open={live || person}
              actions={actions?.(step, run)}
              reveal={reveal?.step === index ? reveal.nonce : undefined}
            />
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
          {onFollowUp && run.followUps && run.followUps.length > 0 && (
            <nav class="follow-ups" aria-label="Follow-up questions">
              {run.followUps.slice(0, 3).map((question, n) => (
                <button
                  key={question}
                  type="button"
                  class="button secondary small follow-up"
                  aria-keyshortcuts={String(n + 1)}
                  // Named by its question alone: the key is said by aria-keyshortcuts.
                  aria-label={question}
                  onClick={() => onFollowUp(question)}
                >
                  <kbd>{n + 1}</kbd>
                  {question}
                </button>
              ))}
            </nav>
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
