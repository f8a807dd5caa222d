/**
 * The HTTP API's views, built from the store's records: what GET /api/sessions and
 * GET /api/sessions/:id return (and `analyst show --json` prints), with a URL for each file.
 * @module
 */
import type {
  HistoryStep,
  SessionHistory,
  StoredArtifact,
  StoredDataset,
  StoredSession,
} from '../store/index.js'
import type { ArtifactView, DatasetInfo, RunView, SessionDetail, SessionSummary, StepView } from './types.js'

export function sessionSummary(session: StoredSession): SessionSummary {
  return {
    id: session.id,
    title: session.title,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    status: session.status,
    questions: session.questions,
    model: session.model,
    sources: session.sources ?? [],
    ...(session.template ? { template: session.template } : {}),
  }
}

export function datasetInfo(dataset: StoredDataset): DatasetInfo {
  return { name: dataset.name, bytes: dataset.bytes, profile: dataset.profile }
}

/** Where the API serves an artifact of a session. */
export function artifactUrl(sessionId: string, name: string): string {
  return `/api/sessions/${encodeURIComponent(sessionId)}/artifacts/${name.split('/').map(encodeURIComponent).join('/')}`
}

/** A question and its answer with its steps; `urlFor` names where each file can be fetched. */
export function runView(run: SessionHistory['runs'][number], urlFor: (name: string) => string): RunView {
  return {
    id: run.id,
    question: run.question,
    answer: run.answer,
    ...(run.followUps ? { followUps: run.followUps } : {}),
    incomplete: run.incomplete,
    unsupportedNumbers: run.unsupportedNumbers,
    status: run.status,
    error: run.error,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    usage: run.usage,
    steps: run.steps.map((step) => stepView(step, urlFor)),
  }
}

export function stepView(step: HistoryStep, urlFor: (name: string) => string): StepView {
  const view = (artifact: StoredArtifact): ArtifactView => ({
    name: artifact.name,
    size: artifact.size,
    mimeType: artifact.mimeType,
    url: urlFor(artifact.name),
  })
  return {
    step: step.step,
    code: step.code,
    text: step.text,
    stdout: step.stdout,
    stderr: step.stderr,
    error: step.error,
    results: step.results.map((result) => ({
      ...result,
      image: result.image ? view(result.image) : undefined,
    })),
    artifacts: step.files.map(view),
    violations: step.violations,
    queries: step.queries ?? [],
    durationMs: step.durationMs,
    ...(step.stopped ? { stopped: step.stopped } : {}),
  }
}

/** Everything about a session; `urlFor` names where each file can be fetched. */
export function sessionDetail(
  history: SessionHistory,
  urlFor: (name: string) => string = (name) => artifactUrl(history.session.id, name),
): SessionDetail {
  return {
    ...sessionSummary(history.session),
    datasets: history.datasets.map(datasetInfo),
    runs: history.runs.map((run) => runView(run, urlFor)),
    blocked: history.blocked,
  }
}
