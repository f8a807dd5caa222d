/** Asks once for the server's access token; the answer is kept in this browser. */
import { useEffect, useRef, useState } from 'preact/hooks'

export function TokenDialog({
  rejected,
  onSubmit,
  onCancel,
}: {
  rejected: boolean
  onSubmit: (token: string) => void
  onCancel: () => void
}) {
  const [value, setValue] = useState('')
  const input = useRef<HTMLInputElement>(null)
  useEffect(() => input.current?.focus(), [])
  return (
    <div class="overlay" role="dialog" aria-modal="true" aria-labelledby="token-title">
      <form
        class="dialog"
        onSubmit={(event) => {
          event.preventDefault()
          if (value.trim()) onSubmit(value.trim())
        }}
      >
        <h2 id="token-title">Access token</h2>
        <p>
          {rejected
            ? 'The server did not accept that token. Enter the right one.'
            : 'This server needs an access token. It is kept in this browser, so you enter it once.'}
        </p>
        <input
          ref={input}
          type="password"
          autocomplete="current-password"
          aria-label="Access token"
          placeholder="Token"
          value={value}
          onInput={(event) => setValue(event.currentTarget.value)}
        />
        <div class="dialog-buttons">
          <button type="button" class="button secondary" onClick={onCancel}>
            Cancel
          </button>
          <button type="submit" class="button" disabled={!value.trim()}>
            Continue
          </button>
        </div>
      </form>
    </div>
  )
}
