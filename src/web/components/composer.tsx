/**
 * The box at the bottom, in two modes. Ask: a question for the model (Enter asks, Shift+Enter adds
 * a line). Code: a cell a person writes and runs without the model (Ctrl/Cmd+Enter runs it).
 * While something runs, Stop (or Esc) interrupts it.
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import { CodeEditor, type CodeEditorHandle } from './code-editor.js'
import type { CellOutcome } from './run.js'

type Mode = 'ask' | 'code'

export function Composer({
  running,
  hasData,
  followUp,
  onAsk,
  onRunCode,
  onStop,
  mode,
  onMode,
}: {
  running: boolean
  hasData: boolean
  followUp: boolean
  onAsk: (question: string) => void
  onRunCode: (code: string) => Promise<CellOutcome>
  onStop: () => void
  mode: Mode
  onMode: (mode: Mode) => void
}) {
  const setMode = onMode
  const [text, setText] = useState('')
  const [code, setCode] = useState('')
  const [outcome, setOutcome] = useState<CellOutcome | null>(null)
  const area = useRef<HTMLTextAreaElement>(null)
  const editor = useRef<CodeEditorHandle | null>(null)

  useEffect(() => {
    const element = area.current
    if (!element) return
    element.style.height = 'auto'
    element.style.height = `${Math.min(element.scrollHeight, 220)}px`
  }, [text, mode])

  const submit = async () => {
    if (running) return
    if (mode === 'ask') {
      const question = text.trim()
      if (!question) return
      onAsk(question)
      setText('')
      return
    }
    const cell = editor.current?.text() ?? code
    if (!cell.trim()) return
    setOutcome(null)
    const result = await onRunCode(cell)
    setOutcome(result)
    // A cell that ran is in the conversation now; one that did not stays to be mended.
    if (!result.error && !result.problem && result.violations.length === 0) {
      editor.current?.setText('')
      setCode('')
    }
  }

  return (
    <form
      class={`composer mode-${mode}`}
      onSubmit={(event) => {
        event.preventDefault()
        void submit()
      }}
    >
      <div class="composer-modes" role="radiogroup" aria-label="Mode">
        {(['ask', 'code'] as const).map((name) => (
          <label key={name} class={mode === name ? 'current' : undefined}>
            <input
              type="radio"
              name="composer-mode"
              value={name}
              checked={mode === name}
              onChange={() => {
                setMode(name)
                setOutcome(null)
              }}
            />
            {name === 'ask' ? 'Ask' : 'Code'}
          </label>
        ))}
      </div>
      <div class="composer-input">
        {mode === 'ask' ? (
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
                void submit()
              }
            }}
          />
        ) : (
          <CodeEditor
            code={code}
            label="Cell"
            placeholder="Python for this session's kernel; Ctrl+Enter runs it"
            autoFocus
            handle={editor}
            onChange={setCode}
            onRun={() => void submit()}
          />
        )}
        {outcome && (outcome.error || outcome.problem || outcome.violations.length > 0) && (
          <p class="composer-outcome" role="alert">
            {outcome.violations.length > 0
              ? `The guard refused this cell: ${outcome.violations.map((v) => v.message).join('; ')}`
              : outcome.error
                ? `${outcome.error.name}: ${outcome.error.value}`
                : outcome.problem}
          </p>
        )}
      </div>
      {running ? (
        <button type="button" class="button secondary" onClick={onStop} title="Stop (Esc)">
          Stop
        </button>
      ) : mode === 'ask' ? (
        <button type="submit" class="button" disabled={!text.trim()}>
          Ask
        </button>
      ) : (
        <button type="submit" class="button" disabled={!code.trim()} title="Run (Ctrl+Enter)">
          Run
        </button>
      )}
    </form>
  )
}
