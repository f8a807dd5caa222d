/** A session someone shared (`/s/<id>`): read-only, with "Continue from here" into one's own. */
import { useEffect, useState } from 'preact/hooks'
import type { SharedSessionView } from '../../server/types.js'
import { account } from '../account.js'
import { ApiError, apiUrl, dataFileUrl } from '../api.js'
import { fromStored } from '../run-state.js'
import { DownloadLink } from './datasets.js'
import { Run } from './run.js'

export function SharedPage({ shareId }: { shareId: string }) {
  const [view, setView] = useState<SharedSessionView | null>(null)
  const [problem, setProblem] = useState<string | null>(null)
  useEffect(() => {
    account
      .shared(shareId)
      .then(setView, (error: unknown) =>
        setProblem(
          error instanceof ApiError && error.status === 404
            ? 'This link does not exist any more: its owner may have stopped sharing it.'
            : String((error as Error).message ?? error),
        ),
      )
  }, [shareId])
  return (
    <div class="app shared">
      <main class="main">
        <header class="topbar">
          <h1 class="title">{view?.session.title ?? 'Shared analysis'}</h1>
          <a class="link" href={apiUrl('/')}>
            Your analyses
          </a>
          {/* Continued with its data files, so only when the owner allowed them (or it has none). */}
          {view && (view.share.allowFiles || view.session.datasets.length === 0) && (
            <button
              type="button"
              class="button small"
              onClick={async () => {
                try {
                  const { id } = await account.fork(shareId)
                  location.assign(`${apiUrl('/')}#/s/${encodeURIComponent(id)}`)
                } catch (error) {
                  setProblem((error as Error).message)
                }
              }}
            >
              Continue from here
            </button>
          )}
        </header>
        <div class="scroll">
          <div class="column">
            {problem && (
              <div class="alert" role="alert">
                <strong>{problem}</strong>
              </div>
            )}
            {view && (
              <>
                <p class="muted">
                  Read-only. Data: {view.session.datasets.map((d) => d.name).join(', ') || 'none'}
                </p>
                {view.share.allowFiles && view.session.datasets.length > 0 && (
                  <div class="files">
                    {view.session.datasets.map((dataset) => (
                      <DownloadLink
                        key={dataset.name}
                        url={dataFileUrl({ shareId }, dataset.name)}
                        name={dataset.name}
                      />
                    ))}
                  </div>
                )}
                <div class="conversation">
                  {view.session.runs.map((run) => (
                    <Run key={run.id} run={fromStored(run)} live={false} />
                  ))}
                </div>
              </>
            )}
          </div>
        </div>
      </main>
    </div>
  )
}
