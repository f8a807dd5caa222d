/**
 * The page's keys: each action has one, and `?` lists them. Letters act only when no text box has
 * the focus (where they are typing).
 */
import { useEffect, useRef } from 'preact/hooks'

export const KEYS: [string, string][] = [
  ['/', 'Go to the question box'],
  ['a', 'Ask mode: a question for the model'],
  ['c', 'Code mode: a cell of your own'],
  ['Enter', 'Ask the question (Shift+Enter: a new line)'],
  ['Ctrl+Enter', 'Run the code being edited (⌘+Enter on a Mac)'],
  ['Esc', 'Stop the question or cell that is running'],
  ['u', 'Go to Add files (then Enter chooses them)'],
  ['n', 'Start a new analysis'],
  ['?', 'This list'],
]

/** True when a key press is typing (in a field or the code editor), not a command. */
export function isTyping(event: KeyboardEvent): boolean {
  const target = event.target as HTMLElement | null
  if (!target) return false
  return target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)
}

export function KeysDialog({ onClose }: { onClose: () => void }) {
  const close = useRef<HTMLButtonElement>(null)
  useEffect(() => close.current?.focus(), [])
  return (
    <div
      class="overlay"
      role="dialog"
      aria-modal="true"
      aria-labelledby="keys-title"
      onKeyDown={(event) => {
        if (event.key === 'Escape') {
          event.preventDefault()
          onClose()
        }
      }}
    >
      <div class="dialog">
        <h2 id="keys-title">Keys</h2>
        <table class="keys-list">
          <tbody>
            {KEYS.map(([key, what]) => (
              <tr key={key}>
                <th scope="row">
                  <kbd>{key}</kbd>
                </th>
                <td>{what}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <div class="dialog-buttons">
          <button ref={close} type="button" class="button" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  )
}
