/**
 * The session's side panel: what its kernel holds (variables), the workspace's files (the data
 * files added, and the files its cells made) with a preview and a download, a place to drop more,
 * its sources and template, and Restart kernel, which says that the state comes back by replay.
 * Beside the conversation on a wide screen; a sheet over it on a narrow one, which holds the
 * keyboard while it is open (the rest of the page is inert, Tab stays in it, Esc closes it and the
 * focus goes back to the Session button). The owner's page only: a shared page is read-only and
 * has none of it.
 */
import { useContext, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks'
import type { ArtifactView, SessionDetail } from '../../server/types.js'
import { dataFileUrl, json, jsonInit, send, withToken } from '../api.js'
import { trapTab } from '../focus.js'
import { bytes } from '../format.js'
import { KernelStateContext } from '../kernel-state.js'
import { ScrollBox } from './scroll-box.js'
import { Variables } from './variables.js'

/** What a preview reads of a text file: enough to see its shape. */
const PREVIEW_BYTES = 4096
const TEXT = /\.(csv|tsv|txt|json|jsonl|md|py|r|sql|log|xml|html|yaml|yml)$/i
const IMAGE = /\.(png|jpe?g|gif|svg|webp)$/i

interface WorkspaceFile {
  name: string
  bytes: number
  url: string
  kind: 'data' | 'made'
}

/** The data files, then the files the cells made (the latest of each name). */
export function workspaceFiles(detail: SessionDetail): WorkspaceFile[] {
  const made = new Map<string, ArtifactView>()
  for (const run of detail.runs)
    for (const step of run.steps) for (const artifact of step.artifacts) made.set(artifact.name, artifact)
  return [
    ...detail.datasets.map((dataset) => ({
      name: `data/${dataset.name}`,
      bytes: dataset.bytes,
      url: dataFileUrl({ sessionId: detail.id }, dataset.name),
      kind: 'data' as const,
    })),
    ...[...made.values()].map((artifact) => ({
      name: artifact.name,
      bytes: artifact.size,
      url: artifact.url,
      kind: 'made' as const,
    })),
  ]
}

/** The first bytes of a file, as text (the rest is not fetched). */
async function head(url: string): Promise<string> {
  const response = await send(url)
  const reader = response.body?.getReader()
  if (!reader) return ''
  const parts: Uint8Array[] = []
  let size = 0
  while (size < PREVIEW_BYTES) {
    const { done, value } = await reader.read()
    if (done) break
    parts.push(value)
    size += value.length
  }
  await reader.cancel().catch(() => undefined)
  const all = new Uint8Array(size)
  let at = 0
  for (const part of parts) {
    all.set(part, at)
    at += part.length
  }
  const text = new TextDecoder().decode(all.subarray(0, PREVIEW_BYTES))
  return size > PREVIEW_BYTES ? `${text}…` : text
}

function Preview({ file }: { file: WorkspaceFile }) {
  const [text, setText] = useState<string | null>(null)
  useEffect(() => {
    if (!TEXT.test(file.name)) return
    let gone = false
    head(file.url).then(
      (value) => !gone && setText(value),
      (error: unknown) => !gone && setText(error instanceof Error ? error.message : String(error)),
    )
    return () => {
      gone = true
    }
  }, [file.url])
  if (IMAGE.test(file.name)) return <img class="file-preview" src={withToken(file.url)} alt={file.name} />
  if (!TEXT.test(file.name)) return <p class="muted">No preview for this kind of file.</p>
  return (
    <ScrollBox class="file-preview code" pre>
      {text ?? 'Loading…'}
    </ScrollBox>
  )
}

function Files({ files, onUpload }: { files: WorkspaceFile[]; onUpload: (files: File[]) => void }) {
  const [open, setOpen] = useState<string | null>(null)
  const [over, setOver] = useState(false)
  return (
    <section class="panel-section" aria-labelledby="panel-files">
      <h3 id="panel-files">Files</h3>
      {files.length === 0 && <p class="muted">No files yet.</p>}
      <ul class="panel-files">
        {files.map((file) => (
          <li key={file.name}>
            <div class="panel-file">
              <span class="panel-file-name" title={file.name}>
                {file.name}
              </span>
              <span class="muted">{bytes(file.bytes)}</span>
              <button
                type="button"
                class="link"
                aria-expanded={open === file.name}
                aria-label={`Preview ${file.name}`}
                onClick={() => setOpen(open === file.name ? null : file.name)}
              >
                Preview
              </button>
              <a
                class="link"
                href={withToken(file.url)}
                download={file.name.split('/').pop()}
                aria-label={`Download ${file.name}`}
              >
                Download
              </a>
            </div>
            {open === file.name && <Preview file={file} />}
          </li>
        ))}
      </ul>
      <label
        class={`drop-zone${over ? ' over' : ''}`}
        onDragOver={(event) => {
          event.preventDefault()
          setOver(true)
        }}
        onDragLeave={() => setOver(false)}
        onDrop={(event) => {
          event.preventDefault()
          // The page's own drop handler would add them a second time.
          event.stopPropagation()
          setOver(false)
          const dropped = Array.from(event.dataTransfer?.files ?? [])
          if (dropped.length > 0) onUpload(dropped)
        }}
      >
        Drop a file here, or choose one: it goes to data/
        <input
          type="file"
          multiple
          onChange={(event) => {
            const chosen = Array.from(event.currentTarget.files ?? [])
            event.currentTarget.value = ''
            if (chosen.length > 0) onUpload(chosen)
          }}
        />
      </label>
    </section>
  )
}

/**
 * Makes every other part of the page inert while the sheet is open (a press outside it closes it);
 * gives the focus back after.
 */
function useSheet(panel: { current: HTMLElement | null }, sheet: boolean, onClose: () => void) {
  const close = useRef(onClose)
  close.current = onClose
  // Before the next paint, so a key that closes the sheet and acts on the page finds it live again.
  useLayoutEffect(() => {
    const element = panel.current
    if (!sheet || !element?.parentElement) return
    const others = [...element.parentElement.children].filter(
      (other): other is HTMLElement => other !== element && other instanceof HTMLElement && !other.inert,
    )
    for (const other of others) other.inert = true
    if (!element.contains(document.activeElement)) element.focus()
    const outside = (event: PointerEvent) => {
      const target = event.target as Element
      // A dialog over the sheet (the key list) is not the page under it.
      if (element.contains(target) || target.closest?.('[aria-modal="true"]')) return
      close.current()
      // The press moves the focus where it landed after this handler: back to the Session button after it.
      setTimeout(() => document.querySelector<HTMLElement>('.panel-toggle')?.focus())
    }
    document.addEventListener('pointerdown', outside)
    return () => {
      document.removeEventListener('pointerdown', outside)
      for (const other of others) other.inert = false
      if (element.contains(document.activeElement) || document.activeElement === document.body)
        document.querySelector<HTMLElement>('.panel-toggle')?.focus()
    }
  }, [sheet])
}

export function SessionPanel({
  detail,
  running,
  open,
  sheet,
  onClose,
  onUpload,
}: {
  detail: SessionDetail
  running: boolean
  /** Shown as a sheet (narrow screens); a wide screen shows it always. */
  open: boolean
  /** Shown now as a sheet over the page: it holds the keyboard until it is closed. */
  sheet: boolean
  onClose: () => void
  onUpload: (files: File[]) => void
}) {
  const panel = useRef<HTMLElement>(null)
  useSheet(panel, sheet, onClose)
  const [restart, setRestart] = useState<{ busy: boolean; said?: string; failed?: boolean }>({ busy: false })
  const [restarts, setRestarts] = useState(0)
  const kernel = useContext(KernelStateContext)
  const steps = detail.runs.reduce((n, run) => n + run.steps.length, 0)
  useEffect(() => setRestart({ busy: false }), [detail.id])
  const restartKernel = async () => {
    setRestart({ busy: true })
    try {
      const { replaying } = await json<{ replaying: number }>(
        `/api/sessions/${encodeURIComponent(detail.id)}/restart`,
        jsonInit('POST'),
      )
      setRestart({
        busy: false,
        said: `The kernel restarted. Its state is rebuilt by replay: the next question or cell runs ${
          replaying === 1 ? 'the 1 earlier cell' : `the ${replaying} earlier cells`
        } that worked again first.`,
      })
      setRestarts((n) => n + 1)
      kernel.restarted()
    } catch (error) {
      setRestart({ busy: false, failed: true, said: error instanceof Error ? error.message : String(error) })
    }
  }
  return (
    <aside
      ref={panel}
      class={`session-panel${open ? ' open' : ''}`}
      aria-label="Session"
      // Focused as the sheet opens (and by the s key), not a stop of Tab's.
      tabIndex={-1}
      onKeyDown={(event) => {
        if (!sheet || !panel.current) return
        if (event.key === 'Escape') {
          event.preventDefault()
          onClose()
        } else trapTab(event, panel.current)
      }}
    >
      <div class="panel-head">
        <h2>Session</h2>
        <button
          type="button"
          class="close panel-close"
          aria-label="Close the session panel"
          onClick={onClose}
        >
          ×
        </button>
      </div>
      <section class="panel-section" aria-labelledby="panel-kernel">
        <h3 id="panel-kernel">Kernel</h3>
        {!running && (
          <Variables sessionId={detail.id} version={`${detail.runs.length}:${steps}:${restarts}`} />
        )}
        <button
          type="button"
          class="button secondary small restart-kernel"
          aria-keyshortcuts="Shift+R"
          disabled={running || restart.busy}
          onClick={() => void restartKernel()}
        >
          Restart kernel
        </button>
        <p class="muted small">State is rebuilt by replaying the session's cells.</p>
        {restart.said && (
          <p
            class={restart.failed ? 'grid-problem' : 'panel-said'}
            role={restart.failed ? 'alert' : 'status'}
          >
            {restart.said}
          </p>
        )}
      </section>
      <Files files={workspaceFiles(detail)} onUpload={onUpload} />
      <section class="panel-section" aria-labelledby="panel-sources">
        <h3 id="panel-sources">Sources and template</h3>
        <p class="small">
          {detail.sources.length > 0 ? `Sources: ${detail.sources.join(', ')}` : 'No database sources.'}
        </p>
        <p class="small">Template: {detail.template ?? "the server's default"}</p>
      </section>
    </aside>
  )
}
