/** The question box at the bottom: Enter asks, Shift+Enter adds a line. */
import { useEffect, useRef, useState } from 'preact/hooks'

export function Composer({
  running,
  hasData,
  followUp,
  onAsk,
  onStop,
}: {
  running: boolean
  hasData: boolean
  followUp: boolean
  onAsk: (question: string) => void
  onStop: () => void
}) {
  const [text, setText] = useState('')
  const area = useRef<HTMLTextAreaElement>(null)

  useEffect(() => {
    const element = area.current
    if (!element) return
    element.style.height = 'auto'
    element.style.height = `${Math.min(element.scrollHeight, 220)}px`
  }, [text])

  const submit = () => {
    const question = text.trim()
    if (!question || running) return
    onAsk(question)
    setText('')
  }

  return (
    <form
      class="composer"
      onSubmit={(event) => {
        event.preventDefault()
        submit()
      }}
    >
      <textarea
        ref={area}
        rows={1}
        aria-label="Question"
        placeholder={
          followUp
            ? 'Ask a follow-up…'
            : hasData
              ? 'Ask a question about your data…'
              : 'Add a data file above, then ask a question about it…'
        }
        value={text}
        onInput={(event) => setText(event.currentTarget.value)}
        onKeyDown={(event) => {
          if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
            event.preventDefault()
            submit()
          }
        }}
      />
      {running ? (
        <button type="button" class="button secondary" onClick={onStop}>
          Stop
        </button>
      ) : (
        <button type="submit" class="button" disabled={!text.trim()}>
          Ask
        </button>
      )}
    </form>
  )
}
