/** The user's API keys: make one (its secret shown this once), see when each was last used, revoke. */
import { useEffect, useState } from 'preact/hooks'
import { type ApiKeyView, account } from '../account.js'
import { ago } from '../format.js'

export function KeysPage({ onProblem }: { onProblem: (error: unknown) => void }) {
  const [keys, setKeys] = useState<ApiKeyView[]>([])
  const [label, setLabel] = useState('')
  const [days, setDays] = useState('')
  const [made, setMade] = useState<string | null>(null)
  const refresh = () => account.keys().then(setKeys, onProblem)
  useEffect(() => void refresh(), [])
  return (
    <section class="page" aria-label="API keys">
      <h2>API keys</h2>
      <p class="muted">
        For scripts, the E2B SDK (E2B_API_KEY) and MCP clients: send <code>Authorization: Bearer KEY</code>.
      </p>
      <form
        class="key-form"
        onSubmit={async (event) => {
          event.preventDefault()
          try {
            const key = await account.createKey(label.trim(), days ? Number(days) : undefined)
            setMade(key.key)
            setLabel('')
            setDays('')
            await refresh()
          } catch (error) {
            onProblem(error)
          }
        }}
      >
        <input
          aria-label="Label"
          placeholder="Label (e.g. laptop)"
          value={label}
          onInput={(e) => setLabel(e.currentTarget.value)}
        />
        <input
          aria-label="Expires in days"
          placeholder="Days (optional)"
          inputMode="numeric"
          value={days}
          onInput={(e) => setDays(e.currentTarget.value)}
        />
        <button type="submit" class="button" disabled={!label.trim()}>
          Make a key
        </button>
      </form>
      {made && (
        <div class="alert new-key" role="status">
          <strong>Copy this key now: it is not shown again.</strong>
          <code class="secret">{made}</code>
        </div>
      )}
      <table class="keys">
        <thead>
          <tr>
            <th class="listing-cell">Label</th>
            <th class="listing-cell">Made</th>
            <th class="listing-cell">Last used</th>
            <th class="listing-cell">Expires</th>
            <th class="listing-cell" />
          </tr>
        </thead>
        <tbody>
          {keys.map((key) => (
            <tr key={key.id}>
              <td class="listing-cell">{key.label}</td>
              <td class="listing-cell">{ago(key.createdAt)}</td>
              <td class="listing-cell">{key.lastUsedAt ? ago(key.lastUsedAt) : 'never'}</td>
              <td class="listing-cell">
                {key.expiresAt ? new Date(key.expiresAt).toLocaleDateString() : 'never'}
              </td>
              <td class="listing-cell">
                <button
                  type="button"
                  class="button secondary small"
                  onClick={async () => {
                    try {
                      await account.revokeKey(key.id)
                      await refresh()
                    } catch (error) {
                      onProblem(error)
                    }
                  }}
                >
                  Revoke
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  )
}
