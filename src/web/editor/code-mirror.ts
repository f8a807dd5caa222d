/**
 * CodeMirror 6 for a cell: Python (or R, or SQL) highlighted, undo, brackets, the usual keys, and
 * Ctrl/Cmd+Enter to run. Loaded only when a person first edits code (code-editor.tsx imports it
 * lazily), so the page's first load does not carry it.
 * @module
 */
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands'
import { python } from '@codemirror/lang-python'
import { sql } from '@codemirror/lang-sql'
import {
  bracketMatching,
  defaultHighlightStyle,
  HighlightStyle,
  indentOnInput,
  StreamLanguage,
  syntaxHighlighting,
} from '@codemirror/language'
import { r } from '@codemirror/legacy-modes/mode/r'
import { EditorState, type Extension } from '@codemirror/state'
import { EditorView, keymap, lineNumbers, placeholder } from '@codemirror/view'

export type CellLanguage = 'python' | 'r' | 'sql'

export interface MountedEditor {
  view: EditorView
  text(): string
  setText(text: string): void
  focus(): void
  destroy(): void
}

export interface EditorOptions {
  doc: string
  language?: CellLanguage
  /** The accessible name of the text box. */
  label: string
  placeholder?: string
  onRun?: () => void
  onChange?: (text: string) => void
}

/**
 * CodeMirror's default highlighting in the page's colours (style.css's `--hl-*`, set for either
 * theme, as the read-only code has them): its own are for a light background, and on the dark
 * theme's they fail the contrast a reader needs.
 */
const THEMED: Record<string, string> = {
  '#708': 'var(--hl-keyword)',
  '#219': 'var(--hl-number)',
  '#164': 'var(--hl-number)',
  '#a11': 'var(--hl-string)',
  '#e40': 'var(--hl-string)',
  '#00f': 'var(--hl-title)',
  '#00c': 'var(--hl-title)',
  '#30a': 'var(--hl-builtin)',
  '#085': 'var(--hl-builtin)',
  '#167': 'var(--hl-builtin)',
  '#256': 'var(--hl-builtin)',
  '#404740': 'var(--hl-comment)',
  '#940': 'var(--hl-comment)',
  '#f00': 'var(--error)',
}
const pageHighlightStyle = HighlightStyle.define(
  defaultHighlightStyle.specs.map((spec) =>
    typeof spec.color === 'string' && THEMED[spec.color] ? { ...spec, color: THEMED[spec.color] } : spec,
  ),
)

function languageOf(language: CellLanguage): Extension {
  if (language === 'sql') return sql()
  if (language === 'r') return StreamLanguage.define(r)
  return python()
}

export function mountEditor(parent: HTMLElement, options: EditorOptions): MountedEditor {
  const run = () => {
    options.onRun?.()
    return true
  }
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: options.doc,
      extensions: [
        lineNumbers(),
        history(),
        indentOnInput(),
        bracketMatching(),
        syntaxHighlighting(pageHighlightStyle),
        languageOf(options.language ?? 'python'),
        // Mod-Enter before the defaults (which would insert a line); Tab indents, Esc then Tab leaves.
        keymap.of([{ key: 'Mod-Enter', run }, indentWithTab, ...defaultKeymap, ...historyKeymap]),
        EditorView.contentAttributes.of({ 'aria-label': options.label }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) options.onChange?.(update.state.doc.toString())
        }),
        ...(options.placeholder ? [placeholder(options.placeholder)] : []),
      ],
    }),
  })
  return {
    view,
    text: () => view.state.doc.toString(),
    setText: (text) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    focus: () => view.focus(),
    destroy: () => view.destroy(),
  }
}
