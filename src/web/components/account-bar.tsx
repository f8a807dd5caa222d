/** Who is signed in, with their pages (API keys; the admin page for admins) and signing out. */
import type { Me } from '../account.js'

export function AccountBar({ me, onSignOut }: { me: Me; onSignOut: () => void }) {
  return (
    <nav class="account" aria-label="Account">
      <span class="account-name" title={me.user.email ?? undefined}>
        {me.user.name}
      </span>
      <a class="link" href="#/keys">
        API keys
      </a>
      {me.user.admin && (
        <a class="link" href="#/admin">
          Admin
        </a>
      )}
      <button type="button" class="button secondary small" onClick={onSignOut}>
        Sign out
      </button>
    </nav>
  )
}
