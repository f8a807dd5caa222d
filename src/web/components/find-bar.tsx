/**
 * The session's find box (key `/`): searches every run the page has, drawn or not (find.ts), says
 * "n of m" in a live region, and Enter or Shift+Enter goes to the next or the previous match: the
 * page draws its run and opens its step (through `onGo`), then the match is highlighted and
 * scrolled to. Esc closes it and gives the focus back.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { type FindMatch, findMatches, highlight, partElements, rangeOf } from '../find.js'
import type { UiRun } from '../run-state.js'

/** How long a match's run and step may take to be drawn before its highlight is given up. */
const DRAW_MS = 5000

export function FindBar({
  runs,
  focusAsk,
  onGo,
  onClose,
}: {
  runs: UiRun[]
  /** Changes each time the find key is pressed: the box takes the focus again. */
  focusAsk: number
  /** Draws the match's run and opens its step. */
  onGo: (match: FindMatch) => void
  onClose: () => void
}) {
  const [query, setQuery] = useState('')
  const [at, setAt] = useState(0)
  const input = useRef<HTMLInputElement>(null)
  const before = useRef<Element | null>(null)
  const matches = useMemo(() => findMatches(runs, query), [runs, query])
  /** The latest go: an earlier one still waiting for its run to be drawn gives up. */
  const latest = useRef(0)

  useEffect(() => {
    if (document.activeElement !== input.current) before.current = document.activeElement
    input.current?.focus()
    input.current?.select()
  }, [focusAsk])
  useEffect(
    () => () => {
      latest.current = -1
      highlight(null)
    },
    [],
  )

  /** Goes to match `n`: drawn, opened, then highlighted once it is on the page. */
  const go = (n: number, text = query) => {
    const all = text === query ? matches : findMatches(runs, text)
    setAt(n)
    const match = all[n]
    highlight(null)
    if (!match) return
    onGo(match)
    const mine = ++latest.current
    const deadline = performance.now() + DRAW_MS
    const show = () => {
      if (mine !== latest.current) return
      const conversation = document.querySelector('.conversation')
      const elements = (conversation && partElements(conversation, match)) ?? []
      const range = rangeOf(elements, text, match.nth)
      if (!range && performance.now() < deadline) {
        requestAnimationFrame(show)
        return
      }
      highlight(range)
      const target = range?.startContainer.parentElement ?? conversation?.children[match.run]
      target?.scrollIntoView({ block: 'center' })
    }
    requestAnimationFrame(show)
  }

  const close = () => {
    highlight(null)
    onClose()
    if (before.current instanceof HTMLElement && before.current.isConnected) before.current.focus()
  }

  const said = !query.trim() ? '' : matches.length === 0 ? 'No matches' : `${at + 1} of ${matches.length}`
  return (
    <search class="find-bar">
      <label class="find-label" for="find-box">
        Find in this session
      </label>
      <input
        ref={input}
        id="find-box"
        type="search"
        placeholder="Questions, answers, code, output, table headers"
        value={query}
        aria-keyshortcuts="/"
        onInput={(event) => {
          const text = event.currentTarget.value
          setQuery(text)
          go(0, text)
        }}
        onKeyDown={(event) => {
          if (event.key === 'Escape') {
            event.preventDefault()
            close()
          } else if (event.key === 'Enter') {
            event.preventDefault()
            if (matches.length === 0) return
            go((at + (event.shiftKey ? matches.length - 1 : 1)) % matches.length)
          }
        }}
      />
      <span class="find-count" role="status">
        {said}
      </span>
      <button
        type="button"
        class="button secondary small"
        disabled={matches.length === 0}
        onClick={() => go((at + matches.length - 1) % matches.length)}
      >
        Previous match
      </button>
      <button
        type="button"
        class="button secondary small"
        disabled={matches.length === 0}
        onClick={() => go((at + 1) % matches.length)}
      >
        Next match
      </button>
      <button type="button" class="close" aria-label="Close find" onClick={close}>
        ×
      </button>
    </search>
  )
}
