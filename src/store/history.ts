/**
 * A session's records put together: its runs with their steps, each step with its files and each
 * chart result with its image artifact; and the figures `analyst show` and `history --json` print.
 * @module
 */
import type {
  HistoryStep,
  HistoryStore,
  SessionHistory,
  StoredArtifact,
  StoredRun,
  StoredStep,
  TokenUsage,
} from './types.js'

/**
 * Everything recorded for the session, or undefined when there is none (for this owner). Read in
 * one snapshot, on one connection: a run that another replica just ended comes with all its steps,
 * and a read does not wait for connections of its own to a database that is slow to accept them.
 */
export function loadSessionHistory(
  store: HistoryStore,
  id: string,
  owner?: string | null,
): Promise<SessionHistory | undefined> {
  return store.snapshot((snapshot) => readSessionHistory(snapshot, id, owner))
}

async function readSessionHistory(
  store: HistoryStore,
  id: string,
  owner?: string | null,
): Promise<SessionHistory | undefined> {
  const session = await store.getSession(id, owner)
  if (!session) return undefined
  const [datasets, runs, steps, artifacts, blocked] = await Promise.all([
    store.datasets(id),
    store.runs(id),
    store.steps(id),
    store.artifacts(id),
    store.blocked(id),
  ])
  return {
    session,
    datasets,
    runs: runs.map((run) => ({
      ...run,
      steps: steps.filter((step) => step.runId === run.id).map((step) => joinArtifacts(step, artifacts)),
    })),
    blocked,
  }
}

function joinArtifacts(step: StoredStep, artifacts: StoredArtifact[]): HistoryStep {
  const own = artifacts.filter((artifact) => artifact.stepId === step.id)
  return {
    ...step,
    files: own.filter((artifact) => artifact.kind === 'file'),
    results: step.results.map(({ image, ...result }) => ({
      ...result,
      image: image ? own.find((artifact) => artifact.kind === 'image' && artifact.name === image) : undefined,
    })),
  }
}

export interface SessionStats {
  questions: number
  executions: number
  successful: number
  failed: number
  /** successful / executions, 0 to 1; null without executions. */
  successRate: number | null
  totalDurationMs: number
  meanDurationMs: number | null
  usage: TokenUsage
}

/** Executions (steps the guard let run), how many succeeded, time running code, tokens. */
export function sessionStats(
  runs: StoredRun[],
  steps: Array<Pick<StoredStep, 'success' | 'violations' | 'durationMs'>>,
): SessionStats {
  const executed = steps.filter((step) => !step.violations?.length)
  const successful = executed.filter((step) => step.success).length
  const totalDurationMs = executed.reduce((sum, step) => sum + step.durationMs, 0)
  const usage = runs.reduce(
    (sum, run) => ({
      inputTokens: sum.inputTokens + run.usage.inputTokens,
      outputTokens: sum.outputTokens + run.usage.outputTokens,
      totalTokens: sum.totalTokens + run.usage.totalTokens,
    }),
    { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
  )
  return {
    questions: runs.length,
    executions: executed.length,
    successful,
    failed: executed.length - successful,
    successRate: executed.length > 0 ? successful / executed.length : null,
    totalDurationMs,
    meanDurationMs: executed.length > 0 ? totalDurationMs / executed.length : null,
    usage,
  }
}

/** The stats of a session straight from the store. */
export async function loadSessionStats(store: HistoryStore, id: string): Promise<SessionStats> {
  const [runs, steps] = await store.snapshot((at) => Promise.all([at.runs(id), at.steps(id)]))
  return sessionStats(runs, steps)
}
