/** The past sessions, newest first, and a way to start a new one. */
import type { SessionSummary } from '../../server/types.js'
import { ago } from '../format.js'

export function Sidebar({
  sessions,
  currentId,
  loading,
  hasToken,
  onNew,
  onDelete,
  onForgetToken,
}: {
  sessions: SessionSummary[]
  currentId: string | null
  loading: boolean
  hasToken: boolean
  onNew: () => void
  onDelete: (session: SessionSummary) => void
  onForgetToken: () => void
}) {
  return (
    <aside class="sidebar">
      <div class="brand">
        <span class="logo" aria-hidden="true">
          ◆
        </span>{' '}
        Analyst
      </div>
      <button type="button" class="button new" onClick={onNew}>
        + New analysis
      </button>
      <nav aria-label="Sessions">
        {sessions.length === 0 && !loading && <p class="muted empty">No analyses yet.</p>}
        <ul class="sessions">
          {sessions.map((session) => (
            <li key={session.id} class={session.id === currentId ? 'current' : ''}>
              <a
                href={`#/s/${encodeURIComponent(session.id)}`}
                class="session-link"
                aria-current={session.id === currentId ? 'page' : undefined}
              >
                <span class="session-title">{session.title || 'Untitled analysis'}</span>
                <span class="session-meta">
                  {session.status === 'running' && <span class="dot running" title="running" />}
                  {session.status === 'interrupted' && <span class="dot interrupted" title="interrupted" />}
                  {ago(session.updatedAt)}
                  {session.questions > 0 &&
                    ` · ${session.questions} question${session.questions === 1 ? '' : 's'}`}
                </span>
              </a>
              <button
                type="button"
                class="delete"
                title="Delete this analysis"
                aria-label={`Delete ${session.title || 'Untitled analysis'}`}
                onClick={() => onDelete(session)}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      </nav>
      {hasToken && (
        <button type="button" class="link forget" onClick={onForgetToken}>
          Forget the access token
        </button>
      )}
    </aside>
  )
}
