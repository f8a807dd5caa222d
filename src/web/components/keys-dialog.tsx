/**
 * The page's keys: each action has one, and `?` lists them. Letters act only when no text box has
 * the focus (where they are typing).
 */
import { useEffect, useRef } from 'preact/hooks'
import { trapTab } from '../focus.js'

export const KEYS: [string, string][] = [
  ['/', 'Find in this session (Enter: the next match, Shift+Enter: the one before; Esc closes it)'],
  ['a', 'Ask mode: go to the question box, for a question to the model'],
  ['c', 'Code mode: a cell of your own'],
  ['Enter', 'Ask the question (Shift+Enter: a new line)'],
  ['Ctrl+Enter', 'Run the code being edited (⌘+Enter on a Mac)'],
  ['Ctrl+wheel', 'Over a chart: zoom it (⌘ on a Mac, or pinch); drag pans, a double-click resets'],
  ['Esc', 'Stop the question or cell that is running; close the session sheet or a dialog'],
  ['1, 2, 3', 'Ask the follow-up question of that number, under the last answer'],
  ['u', 'Go to Add files (then Enter chooses them)'],
  ['s', 'Open the session panel: variables, files, Restart kernel (a sheet on a narrow screen)'],
  ['f', "Go to the session's files: Preview and Download each"],
  ['Shift+R', 'Restart the kernel (its state is rebuilt by replay)'],
  ['e', 'Go to Export: Notebook, Python, HTML report'],
  ['n', 'Start a new analysis'],
  ['Tab', 'Go to the next button, link or field (Shift+Tab: the one before); Enter or Space uses it'],
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
        } else trapTab(event, event.currentTarget)
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
