/** Shares the open session by link with the instance's signed-in users (read-only), or stops sharing it. */
import { useState } from 'preact/hooks'
import { account } from '../account.js'

export function ShareButton({
  sessionId,
  onProblem,
}: {
  sessionId: string
  onProblem: (error: unknown) => void
}) {
  const [url, setUrl] = useState<string | null>(null)
  const [allowFiles, setAllowFiles] = useState(false)
  const [open, setOpen] = useState(false)
  const share = async (files: boolean) => {
    try {
      setUrl((await account.share(sessionId, files)).url)
    } catch (error) {
      onProblem(error)
    }
  }
  return (
    <span class="share">
      <button
        type="button"
        class="button secondary small"
        onClick={() => {
          setOpen(!open)
          if (!open && !url) void share(allowFiles)
        }}
      >
        Share
      </button>
      {open && (
        <div class="share-panel" role="dialog" aria-label="Share">
          {url ? (
            <>
              <input readOnly aria-label="Link" value={url} onFocus={(e) => e.currentTarget.select()} />
              <label>
                <input
                  type="checkbox"
                  checked={allowFiles}
                  onChange={(e) => {
                    setAllowFiles(e.currentTarget.checked)
                    void share(e.currentTarget.checked)
                  }}
                />{' '}
                Viewers may see the data files and continue from here
              </label>
              <button
                type="button"
                class="link"
                onClick={async () => {
                  try {
                    await account.unshare(sessionId)
                    setUrl(null)
                    setOpen(false)
                  } catch (error) {
                    onProblem(error)
                  }
                }}
              >
                Stop sharing
              </button>
            </>
          ) : (
            <span class="muted">Making a link…</span>
          )}
        </div>
      )}
    </span>
  )
}
