/**
 * A copy of a session for another owner ("continue from here" on a shared session): its data,
 * runs, steps, files and conversation, through the HistoryStore's own methods. Blobs are shared,
 * not copied (they are content-addressed); the kernel's state comes back as for any session that
 * reopens, by replaying the successful cells.
 * @module
 */
import type { HistoryStore, StoredSession } from '../store/index.js'

export async function forkSession(
  history: HistoryStore,
  sourceId: string,
  options: { owner: string | null; title?: string },
): Promise<StoredSession> {
  // One moment of the source, which another replica may be answering: its conversation and its steps agree.
  const { source, datasets, runs, steps, artifacts, messages } = await history.snapshot(async (at) => {
    const source = await at.getSession(sourceId)
    if (!source) throw new Error(`No session ${sourceId} to fork`)
    const [datasets, runs, steps, artifacts, messages] = await Promise.all([
      at.datasets(sourceId),
      at.runs(sourceId),
      at.steps(sourceId),
      at.artifacts(sourceId),
      at.messages(sourceId),
    ])
    return { source, datasets, runs, steps, artifacts, messages }
  })
  const copy = await history.createSession({
    title: options.title ?? source.title,
    owner: options.owner,
    ...(source.model ? { model: source.model } : {}),
    ...(source.sources ? { sources: source.sources } : {}),
    ...(source.template ? { template: source.template } : {}),
    ...(source.templateId ? { templateId: source.templateId } : {}),
    ...(source.language ? { language: source.language } : {}),
  })
  for (const { createdAt: _, ...dataset } of datasets) await history.putDataset(copy.id, dataset)
  for (const run of runs) {
    const started = await history.startRun(copy.id, run.question)
    for (const step of steps.filter((s) => s.runId === run.id)) {
      const { id, runId: _run, sessionId: _session, success: _success, createdAt: _created, ...input } = step
      await history.commitStep({
        runId: started.id,
        sessionId: copy.id,
        step: input,
        artifacts: artifacts
          .filter((artifact) => artifact.stepId === id)
          .map(({ name, kind, mimeType, size, sha256 }) => ({ name, kind, mimeType, size, sha256 })),
        blocked: [],
      })
    }
    if (run.status === 'done')
      await history.finishRun(started.id, {
        answer: run.answer ?? '',
        followUps: run.followUps,
        incomplete: run.incomplete,
        unsupportedNumbers: run.unsupportedNumbers,
        usage: run.usage,
      })
    else
      await history.failRun(
        started.id,
        run.error ?? 'not answered',
        run.status === 'running' ? 'interrupted' : run.status,
      )
  }
  if (messages.length > 0) await history.appendMessages(copy.id, messages)
  return (await history.getSession(copy.id)) ?? copy
}
