/**
 * The HTTP API's views, built from the store's records: what GET /api/sessions and
 * GET /api/sessions/:id return (and `analyst show --json` prints), with a URL for each file.
 * @module
 */
import type { SessionHistory, StoredArtifact, StoredDataset, StoredSession } from '../store/index.js'
import type { ArtifactView, DatasetInfo, SessionDetail, SessionSummary } from './types.js'

export function sessionSummary(session: StoredSession): SessionSummary {
  return {
    id: session.id,
    title: session.title,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    status: session.status,
    questions: session.questions,
    model: session.model,
  }
}

export function datasetInfo(dataset: StoredDataset): DatasetInfo {
  return { name: dataset.name, bytes: dataset.bytes, profile: dataset.profile }
}

/** Where the API serves an artifact of a session. */
export function artifactUrl(sessionId: string, name: string): string {
  return `/api/sessions/${encodeURIComponent(sessionId)}/artifacts/${name.split('/').map(encodeURIComponent).join('/')}`
}

/** Everything about a session; `urlFor` names where each file can be fetched. */
export function sessionDetail(
  history: SessionHistory,
  urlFor: (name: string) => string = (name) => artifactUrl(history.session.id, name),
): SessionDetail {
  const view = (artifact: StoredArtifact): ArtifactView => ({
    name: artifact.name,
    size: artifact.size,
    mimeType: artifact.mimeType,
    url: urlFor(artifact.name),
  })
  return {
    ...sessionSummary(history.session),
    datasets: history.datasets.map(datasetInfo),
    runs: history.runs.map((run) => ({
      id: run.id,
      question: run.question,
      answer: run.answer,
      incomplete: run.incomplete,
      unsupportedNumbers: run.unsupportedNumbers,
      status: run.status,
      error: run.error,
      startedAt: run.startedAt,
      finishedAt: run.finishedAt,
      usage: run.usage,
      steps: run.steps.map((step) => ({
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
        durationMs: step.durationMs,
      })),
    })),
    blocked: history.blocked,
  }
}
