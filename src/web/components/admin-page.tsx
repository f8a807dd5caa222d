/**
 * For admins: the users, what they use, and disabling one (their keys and sign-ins stop at once);
 * then the sessions no user owns, to give each to its user.
 */
import { Fragment } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { account, type UserView } from '../account.js'
import { ago, bytes, count } from '../format.js'
import { UnownedSessions } from './unowned-sessions.js'
import { UserSessions } from './user-sessions.js'

/** A user's quotas in a few words ('' when none apply). */
function quotaText(quotas: UserView['quotas']): string {
  return [
    quotas.sessions !== undefined && `${count(quotas.sessions)} sessions`,
    quotas.concurrentRuns !== undefined && `${count(quotas.concurrentRuns)} runs at once`,
    quotas.uploadBytes !== undefined && `${bytes(quotas.uploadBytes)} of data`,
    quotas.requestsPerMinute !== undefined && `${count(quotas.requestsPerMinute)} requests/min`,
  ]
    .filter(Boolean)
    .join(', ')
}

export function AdminPage({ selfId, onProblem }: { selfId: string; onProblem: (error: unknown) => void }) {
  const [users, setUsers] = useState<UserView[]>([])
  /** The user whose sessions are shown under their row. */
  const [open, setOpen] = useState<string | null>(null)
  const refresh = () => account.users().then(setUsers, onProblem)
  useEffect(() => void refresh(), [])
  return (
    <>
      <section class="page" aria-label="Users">
        <h2>Users</h2>
        <table class="users">
          <thead>
            <tr>
              <th class="listing-cell">Name</th>
              <th class="listing-cell">Email</th>
              <th class="listing-cell">Groups</th>
              <th class="listing-cell">Sessions</th>
              <th class="listing-cell">Runs</th>
              <th class="listing-cell">Tokens by model</th>
              <th class="listing-cell">Quotas</th>
              <th class="listing-cell">Last seen</th>
              <th class="listing-cell" />
            </tr>
          </thead>
          <tbody>
            {users.map((user) => (
              <Fragment key={user.id}>
                <tr class={user.disabled ? 'listing-row-disabled' : ''}>
                  <td class="listing-cell">
                    {user.name}
                    {user.admin ? ' (admin)' : ''}
                  </td>
                  <td class="listing-cell">{user.email ?? ''}</td>
                  <td class="listing-cell">{user.groups.join(', ')}</td>
                  <td class="listing-cell">
                    {user.usage.sessions > 0 ? (
                      <button
                        type="button"
                        class="link"
                        aria-expanded={open === user.id}
                        aria-label={`${user.usage.sessions}: sessions of ${user.name}`}
                        onClick={() => setOpen(open === user.id ? null : user.id)}
                      >
                        {user.usage.sessions}
                      </button>
                    ) : (
                      0
                    )}
                  </td>
                  <td class="listing-cell">
                    {user.activity.runs}
                    {user.usage.runningRuns ? ` (${user.usage.runningRuns} running)` : ''}
                  </td>
                  <td class="listing-cell">
                    {user.activity.tokens.map((row) => (
                      <div key={row.model ?? ''}>
                        {row.model ?? 'default model'}: {count(row.totalTokens)} ({count(row.inputTokens)} in,{' '}
                        {count(row.outputTokens)} out)
                      </div>
                    ))}
                  </td>
                  <td class="listing-cell">{quotaText(user.quotas)}</td>
                  <td class="listing-cell">{user.lastSeenAt ? ago(user.lastSeenAt) : ''}</td>
                  <td class="listing-cell">
                    {user.id !== selfId && (
                      <button
                        type="button"
                        class="button secondary small"
                        onClick={async () => {
                          try {
                            await account.setDisabled(user.id, !user.disabled)
                            await refresh()
                          } catch (error) {
                            onProblem(error)
                          }
                        }}
                      >
                        {user.disabled ? 'Enable' : 'Disable'}
                      </button>
                    )}
                  </td>
                </tr>
                {open === user.id && (
                  <tr>
                    <td class="listing-cell" colSpan={9}>
                      <UserSessions user={user} onProblem={onProblem} />
                    </td>
                  </tr>
                )}
              </Fragment>
            ))}
          </tbody>
        </table>
      </section>
      <UnownedSessions users={users} onAssigned={() => void refresh()} onProblem={onProblem} />
    </>
  )
}
