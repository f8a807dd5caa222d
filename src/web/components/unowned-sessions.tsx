/**
 * For admins: the sessions no user owns (made with an ANALYST_TOKEN token before sign-in, or with
 * none on loopback), each given to a user with a pick and a click. Once given, it is theirs alone.
 */
import { useEffect, useState } from 'preact/hooks'
import { account, type UnownedSessionView, type UserView } from '../account.js'
import { ago } from '../format.js'

/** Who made it, in words: a token is named by the start of its hash, never by itself. */
function madeBy(owner: UnownedSessionView['owner']): string {
  return owner ? `token ${owner.token.slice(0, 8)}…` : 'no token (loopback)'
}

export function UnownedSessions({
  users,
  onAssigned,
  onProblem,
}: {
  users: UserView[]
  /** A session was given to a user: their counts changed. */
  onAssigned: () => void
  onProblem: (error: unknown) => void
}) {
  const [sessions, setSessions] = useState<UnownedSessionView[]>([])
  const [picked, setPicked] = useState<Record<string, string>>({})
  const refresh = () => account.unownedSessions().then(setSessions, onProblem)
  useEffect(() => void refresh(), [])
  const enabled = users.filter((user) => !user.disabled)
  return (
    <section class="page" aria-label="Sessions no user owns">
      <h2>Sessions no user owns</h2>
      <p class="muted">
        Made with an ANALYST_TOKEN token, or with none on this machine. Give each to the user it belongs to:
        it is then theirs alone.
      </p>
      {sessions.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <table class="unowned">
          <thead>
            <tr>
              <th class="listing-cell">Title</th>
              <th class="listing-cell">Made with</th>
              <th class="listing-cell">Questions</th>
              <th class="listing-cell">Last used</th>
              <th class="listing-cell">Give to</th>
              <th class="listing-cell" />
            </tr>
          </thead>
          <tbody>
            {sessions.map((session) => {
              const title = session.title || 'Untitled analysis'
              const userId = picked[session.id] ?? ''
              return (
                <tr key={session.id}>
                  <td class="listing-cell">{title}</td>
                  <td class="listing-cell">{madeBy(session.owner)}</td>
                  <td class="listing-cell">{session.questions}</td>
                  <td class="listing-cell">{ago(session.updatedAt)}</td>
                  <td class="listing-cell">
                    <select
                      aria-label={`Give ${title} to`}
                      value={userId}
                      onChange={(e) => setPicked((all) => ({ ...all, [session.id]: e.currentTarget.value }))}
                    >
                      <option value="">Choose a user</option>
                      {enabled.map((user) => (
                        <option key={user.id} value={user.id}>
                          {user.name}
                          {user.email ? ` (${user.email})` : ''}
                        </option>
                      ))}
                    </select>
                  </td>
                  <td class="listing-cell">
                    <button
                      type="button"
                      class="button secondary small"
                      disabled={!userId}
                      onClick={async () => {
                        try {
                          await account.assign(session.id, userId)
                          await refresh()
                          onAssigned()
                        } catch (error) {
                          onProblem(error)
                        }
                      }}
                    >
                      Give
                    </button>
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      )}
    </section>
  )
}
