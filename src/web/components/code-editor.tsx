/**
 * A cell's code in an editor: CodeMirror, fetched the first time any editor opens (a few hundred
 * KB the page does not need until then). Until it has loaded the code shows as it was.
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import type { CellLanguage, MountedEditor } from '../editor/code-mirror.js'

let loading: Promise<typeof import('../editor/code-mirror.js')> | undefined
const loadEditor = () => {
  loading ??= import('../editor/code-mirror.js')
  return loading
}

export interface CodeEditorHandle {
  text(): string
  setText(text: string): void
  focus(): void
}

export function CodeEditor({
  code,
  label,
  language,
  placeholder,
  autoFocus,
  onRun,
  onChange,
  handle,
}: {
  code: string
  label: string
  language?: CellLanguage
  placeholder?: string
  autoFocus?: boolean
  /** Ctrl/Cmd+Enter. */
  onRun?: () => void
  onChange?: (text: string) => void
  /** Filled once the editor is there. */
  handle?: { current: CodeEditorHandle | null }
}) {
  const parent = useRef<HTMLDivElement>(null)
  const [ready, setReady] = useState(false)
  // The latest callbacks, without remounting the editor when they change.
  const callbacks = useRef({ onRun, onChange })
  callbacks.current = { onRun, onChange }
  useEffect(() => {
    let editor: MountedEditor | undefined
    let gone = false
    void loadEditor().then(({ mountEditor }) => {
      if (gone || !parent.current) return
      editor = mountEditor(parent.current, {
        doc: code,
        label,
        language,
        placeholder,
        onRun: () => callbacks.current.onRun?.(),
        onChange: (text) => callbacks.current.onChange?.(text),
      })
      if (handle) handle.current = editor
      setReady(true)
      if (autoFocus) editor.focus()
    })
    return () => {
      gone = true
      editor?.destroy()
      if (handle) handle.current = null
    }
    // The editor is made once; later changes to `code` come through the handle.
  }, [])
  return (
    <div class="code-editor" ref={parent}>
      {!ready && <pre class="code loading">{code || placeholder}</pre>}
    </div>
  )
}
