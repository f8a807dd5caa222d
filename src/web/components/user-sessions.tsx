/**
 * For admins: one user's sessions, by title, questions and when last used (who uses what). An
 * admin sees no more of them: their content is the user's own.
 */
import { useEffect, useState } from 'preact/hooks'
import type { SessionSummary } from '../../server/types.js'
import { account, type UserView } from '../account.js'
import { ago } from '../format.js'

export function UserSessions({ user, onProblem }: { user: UserView; onProblem: (error: unknown) => void }) {
  const [sessions, setSessions] = useState<SessionSummary[] | null>(null)
  useEffect(() => void account.sessionsOf(user.id).then(setSessions, onProblem), [user.id])
  if (!sessions) return <p class="muted">Loading…</p>
  return (
    <ul class="user-sessions" aria-label={`${user.name}'s sessions`}>
      {sessions.map((session) => (
        <li key={session.id}>
          {session.title || 'Untitled analysis'}{' '}
          <span class="muted">
            · {session.questions} {session.questions === 1 ? 'question' : 'questions'} ·{' '}
            {ago(session.updatedAt)}
          </span>
        </li>
      ))}
    </ul>
  )
}
