/**
 * The page: sessions on the left; the open session's files, conversation and question box on
 * the right. The open session is in the URL's hash (`#/s/<id>`), so reloading keeps it and the
 * page needs no server-side routes.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import type { SessionDetail, SessionSummary, SourceInfo, TemplateView } from '../server/types.js'
import { account, type SignInState, signInState, signInUrl } from './account.js'
import {
  ApiError,
  api,
  apiUrl,
  dataFileUrl,
  exportUrl,
  onTokenNeeded,
  type StreamEvent,
  setSignIn,
  token,
  withToken,
} from './api.js'
import { AccountBar } from './components/account-bar.js'
import { AdminPage } from './components/admin-page.js'
import { Composer } from './components/composer.js'
import { Datasets } from './components/datasets.js'
import { Deferred } from './components/deferred.js'
import { FindBar } from './components/find-bar.js'
import { isTyping, KeysDialog } from './components/keys-dialog.js'
import { KeysPage } from './components/keys-page.js'
import { type CellOutcome, Run, type StepActions } from './components/run.js'
import { SessionPanel } from './components/session-panel.js'
import { ShareButton } from './components/share-button.js'
import { SharedPage } from './components/shared-page.js'
import { Sidebar } from './components/sidebar.js'
import { Sources } from './components/sources.js'
import { TemplatePicker } from './components/template-picker.js'
import { TokenDialog } from './components/token-dialog.js'
import type { FindMatch } from './find.js'
import { type KernelGone, tellRestarted, watchKernelElsewhere } from './kernel-elsewhere.js'
import { KernelStateContext } from './kernel-state.js'
import { useMedia } from './media.js'
import { applyEvent, endRun, fromStored, mergeLive, newRun, type UiRun, type UiStep } from './run-state.js'

interface Problem {
  message: string
  hint?: string
}

interface Live {
  sessionId: string
  run: UiRun
  controller: AbortController
}

/** Sessions with this many runs or fewer are drawn whole at once; longer ones as they are scrolled to. */
const EAGER_RUNS = 10

/** About how tall a run is drawn (its steps closed): its question and answer, a line a step, its charts and tables. */
function standInHeight(run: UiRun): number {
  const results = run.steps.flatMap((step) => step.results)
  const charts = results.filter((result) => result.image).length
  const tables = results.filter((result) => result.data && !result.image).length
  return 140 + 44 * run.steps.length + 360 * charts + 380 * tables
}

/**
 * The session in the address, asked for as the page starts, beside the sign-in check rather than
 * after it: a plain request (no token prompt, no sign-in redirect), used once if it worked.
 */
let early: { id: string; detail: Promise<SessionDetail | undefined> } | null = null
function askEarly(id: string | null) {
  if (!id) return
  const headers: Record<string, string> = {}
  const value = token.get()
  if (value) headers.Authorization = `Bearer ${value}`
  const detail = fetch(apiUrl(`/api/sessions/${encodeURIComponent(id)}`), { headers })
    .then((response) => (response.ok ? (response.json() as Promise<SessionDetail>) : undefined))
    .catch(() => undefined)
  early = { id, detail }
}

/** How long a Stop waits for the server's answer before it closes the run's own request instead. */
const STOP_ANSWER_MS = 3000
/**
 * How long the page waits for a run on another replica that the Stop reached only as a request
 * (`pending`): its holder finds it at its lease's next renewal (every 5 s by default).
 */
const STOP_PENDING_MS = 8000

function sessionFromHash(): string | null {
  const match = /^#\/s\/([^/?#]+)/.exec(location.hash)
  return match?.[1] ? decodeURIComponent(match[1]) : null
}

/** The account's pages, in the hash too: `#/keys`, `#/admin`. */
function pageFromHash(): 'keys' | 'admin' | null {
  return location.hash === '#/keys' ? 'keys' : location.hash === '#/admin' ? 'admin' : null
}

function go(id: string | null) {
  const hash = id ? `#/s/${encodeURIComponent(id)}` : '#/'
  if (location.hash !== hash) location.hash = hash
}

function problemOf(error: unknown): Problem {
  if (error instanceof ApiError) return { message: error.message, hint: error.hint }
  if (error instanceof Error) {
    if (error.name === 'AbortError') return { message: 'Stopped.' }
    return { message: error.message, hint: error.name === 'TypeError' ? 'Is the server running?' : undefined }
  }
  return { message: String(error) }
}

/**
 * The page at /s/<id> is a shared session; any other is the workspace, once the browser is signed
 * in where the server signs users in (a browser that is not goes to the sign-in page).
 */
export function App() {
  const shareId = /\/s\/([^/]+)$/.exec(location.pathname)?.[1]
  const [signin, setSigninState] = useState<SignInState | null>(null)
  useEffect(() => {
    if (!shareId) askEarly(sessionFromHash())
    signInState().then(
      (state) => {
        if (state.kind === 'out') {
          location.assign(signInUrl())
          return
        }
        if (state.kind === 'in') setSignIn({ csrfToken: state.me.csrfToken, signInUrl: signInUrl() })
        setSigninState(state)
      },
      () => setSigninState({ kind: 'none' }),
    )
  }, [])
  if (!signin) return null
  if (shareId) return <SharedPage shareId={decodeURIComponent(shareId)} />
  return <Workspace signin={signin} />
}

function Workspace({ signin }: { signin: SignInState }) {
  const me = signin.kind === 'in' ? signin.me : null
  const [page, setPage] = useState(pageFromHash())
  const [sessions, setSessions] = useState<SessionSummary[]>([])
  const [listLoading, setListLoading] = useState(true)
  const [currentId, setCurrentId] = useState<string | null>(sessionFromHash())
  const [detail, setDetail] = useState<SessionDetail | null>(null)
  const [live, setLive] = useState<Live | null>(null)
  const [uploading, setUploading] = useState<string[]>([])
  const [problem, setProblem] = useState<Problem | null>(null)
  const [dragging, setDragging] = useState(false)
  // The session panel as a sheet (narrow screens, as style.css has it; a wide one shows it beside
  // the conversation).
  const [panelOpen, setPanelOpen] = useState(false)
  const narrow = useMedia('(max-width: 1100px)')
  const [tokenAsk, setTokenAsk] = useState<{ rejected: boolean; resolve: (t: string | null) => void } | null>(
    null,
  )
  const [hasToken, setHasToken] = useState(Boolean(token.get()))
  /** The server's sources this caller may use, and those a new session will get. */
  const [sources, setSources] = useState<SourceInfo[]>([])
  const [chosen, setChosen] = useState<string[]>([])
  /** The templates built on the server, and the one a new session will run in (undefined: the default). */
  const [templates, setTemplates] = useState<TemplateView[]>([])
  const [template, setTemplate] = useState<string | undefined>(undefined)
  /** Finished live runs by id: the model's prose, which stored runs do not keep. */
  const finished = useRef(new Map<string, UiRun>())
  const currentRef = useRef(currentId)
  currentRef.current = currentId
  const bottom = useRef<HTMLDivElement>(null)

  // One token prompt at a time, shared by every request that got a 401.
  const pendingToken = useRef<Promise<string | null> | null>(null)
  useEffect(() => {
    onTokenNeeded((rejected) => {
      if (!pendingToken.current) {
        pendingToken.current = new Promise<string | null>((resolve) =>
          setTokenAsk({
            rejected,
            resolve: (value) => {
              pendingToken.current = null
              setTokenAsk(null)
              if (value) setHasToken(true)
              resolve(value)
            },
          }),
        )
      }
      return pendingToken.current
    })
  }, [])

  const refreshList = useCallback(async () => {
    try {
      setSessions(await api.listSessions())
    } catch (error) {
      setProblem(problemOf(error))
    } finally {
      setListLoading(false)
    }
  }, [])

  const refreshDetail = useCallback(async (id: string): Promise<SessionDetail | undefined> => {
    try {
      const asked = early?.id === id ? await early.detail : undefined
      early = null
      const next = asked ?? (await api.getSession(id))
      if (currentRef.current === id) setDetail(next)
      return next
    } catch (error) {
      if (currentRef.current !== id) return undefined
      if (error instanceof ApiError && error.status === 404) {
        setProblem({ message: 'That analysis no longer exists.' })
        go(null)
      } else setProblem(problemOf(error))
      return undefined
    }
  }, [])

  useEffect(() => {
    void refreshList()
    const onHash = () => {
      setCurrentId(sessionFromHash())
      setPage(pageFromHash())
    }
    window.addEventListener('hashchange', onHash)
    return () => window.removeEventListener('hashchange', onHash)
  }, [refreshList])

  useEffect(() => {
    setDetail(null)
    // Another session's sheet opens when it is asked for, not as the last one was left.
    setPanelOpen(false)
    if (currentId) void refreshDetail(currentId)
  }, [currentId, refreshDetail])

  // Timed by bench/webui.mjs: a session's steps are on the screen and the page takes input.
  const shownId = detail && detail.id === currentId ? detail.id : null
  useEffect(() => {
    if (shownId) performance.mark('analyst:session-shown', { detail: shownId })
  }, [shownId])

  // A run that another tab (or an earlier page) started: follow it until it ends.
  const runningElsewhere =
    detail?.runs.some((run) => run.status === 'running') && !(live && live.sessionId === detail.id)
  useEffect(() => {
    if (!runningElsewhere || !currentId) return
    const timer = setInterval(() => void refreshDetail(currentId), 2000)
    return () => clearInterval(timer)
  }, [runningElsewhere, currentId, refreshDetail])

  const liveHere = live && live.sessionId === currentId ? live : null
  const liveStatus = liveHere?.run.status
  const liveSteps = liveHere?.run.steps.length ?? 0
  const liveAnswer = liveHere?.run.answer
  // Follow the live run down the page as it grows.
  useEffect(() => {
    if (liveStatus) bottom.current?.scrollIntoView({ block: 'end', behavior: 'smooth' })
  }, [liveStatus, liveSteps, liveAnswer])

  const ensureSession = async (): Promise<string> => {
    if (currentRef.current) return currentRef.current
    const { id } = await api.createSession({
      ...(sources.length ? { sources: chosen } : {}),
      ...(template ? { template } : {}),
    })
    currentRef.current = id
    go(id)
    void refreshList()
    return id
  }

  /** The open session (made when there is none yet), or undefined after showing why it could not be. */
  const sessionOrProblem = async (): Promise<string | undefined> => {
    setProblem(null)
    try {
      return await ensureSession()
    } catch (error) {
      setProblem(problemOf(error))
      return undefined
    }
  }

  const upload = async (files: File[]) => {
    const id = await sessionOrProblem()
    if (!id) return
    for (const file of files) {
      setUploading((names) => [...names, file.name])
      try {
        await api.upload(id, file)
      } catch (error) {
        const { message, hint } = problemOf(error)
        setProblem({ message: `${file.name}: ${message}`, hint })
      } finally {
        setUploading((names) => names.filter((name) => name !== file.name))
      }
      await refreshDetail(id)
    }
    void refreshList()
  }

  /** Moves when the session's kernel restarts (or is found gone): the tables it held are gone. */
  const [kernelStarts, setKernelStarts] = useState(0)
  const [kernelGone, setKernelGone] = useState<KernelGone>('restarted')
  const lost = (why: KernelGone) => {
    setKernelGone(why)
    setKernelStarts((n) => n + 1)
  }
  const ask = async (question: string) => {
    const id = await sessionOrProblem()
    if (!id) return
    const controller = new AbortController()
    let run = newRun(question)
    setLive({ sessionId: id, run, controller })
    const update = (next: UiRun) => {
      run = next
      setLive((current) => (current && current.controller === controller ? { ...current, run } : current))
    }
    try {
      const onEvent = (event: StreamEvent) => {
        // A new kernel, its cells replayed: the old one's tables are gone.
        if (event.type === 'ready') lost('restarted')
        update(applyEvent(run, event, id))
      }
      await api.ask(id, question, onEvent, controller.signal)
      update(endRun(run, 'The connection closed before the analysis finished.'))
    } catch (error) {
      update(endRun(run, problemOf(error).message))
      if (!(error instanceof Error && error.name === 'AbortError') && !run.steps.length)
        setProblem(problemOf(error))
    }
    if (run.id) finished.current.set(run.id, run)
    const [stored] = await Promise.all([refreshDetail(id), refreshList()])
    // The stored run shows it from now on. One the server did not store (it failed before it
    // started, e.g. no model is configured) stays as it streamed, with its error.
    if (!stored?.runs.some((storedRun) => storedRun.id === run.id)) {
      orphans.current.set(id, [...(orphans.current.get(id) ?? []), run])
    }
    setLive((current) => (current && current.controller === controller ? null : current))
  }
  /** Runs that streamed but are not in the stored session, by session. */
  const orphans = useRef(new Map<string, UiRun[]>())

  /** A person's cells running now (Run, Run below, Code mode): Stop aborts them. */
  const [cells, setCells] = useState<AbortController | null>(null)
  /** Runs cells one after another as a person's, until one is refused or fails. */
  const runCells = async (codes: string[]): Promise<CellOutcome> => {
    const id = await sessionOrProblem()
    if (!id) return { violations: [], problem: 'There is no session to run it in.', ran: 0 }
    const controller = new AbortController()
    setCells(controller)
    let outcome: CellOutcome = { violations: [], ran: 0 }
    try {
      for (const code of codes) {
        const cell = await api.runCell(id, code, controller.signal)
        outcome = { violations: cell.violations, error: cell.error, ran: outcome.ran + 1 }
        await refreshDetail(id)
        if (cell.violations.length > 0 || cell.error) break
      }
    } catch (error) {
      outcome = { ...outcome, problem: problemOf(error).message }
    } finally {
      setCells((current) => (current === controller ? null : current))
    }
    await Promise.all([refreshDetail(id), refreshList()])
    return outcome
  }

  const remove = async (session: SessionSummary) => {
    if (!confirm(`Delete “${session.title || 'Untitled analysis'}” and its files?`)) return
    try {
      await api.deleteSession(session.id)
      if (currentRef.current === session.id) go(null)
      await refreshList()
    } catch (error) {
      setProblem(problemOf(error))
    }
  }

  // Files dropped anywhere on the page are added to the open analysis (or a new one).
  const uploadRef = useRef(upload)
  uploadRef.current = upload
  useEffect(() => {
    const hasFiles = (event: DragEvent) => Boolean(event.dataTransfer?.types.includes('Files'))
    const over = (event: DragEvent) => {
      if (!hasFiles(event)) return
      event.preventDefault()
      setDragging(true)
    }
    const leave = (event: DragEvent) => {
      if (event.relatedTarget === null) setDragging(false)
    }
    const drop = (event: DragEvent) => {
      if (!hasFiles(event)) return
      event.preventDefault()
      setDragging(false)
      const files = Array.from(event.dataTransfer?.files ?? [])
      if (files.length > 0) void uploadRef.current(files)
    }
    window.addEventListener('dragover', over)
    window.addEventListener('dragleave', leave)
    window.addEventListener('drop', drop)
    return () => {
      window.removeEventListener('dragover', over)
      window.removeEventListener('dragleave', leave)
      window.removeEventListener('drop', drop)
    }
  }, [])

  const startNew = () => {
    setProblem(null)
    setChosen(sources.filter((source) => source.default).map((source) => source.name))
    go(null)
  }
  const startNewRef = useRef(startNew)
  startNewRef.current = startNew

  // The sources once the token is known (a server without any lists none).
  useEffect(() => {
    api.listSources().then(
      (listed) => {
        setSources(listed)
        setChosen(listed.filter((source) => source.default).map((source) => source.name))
      },
      () => setSources([]),
    )
    api.listTemplates().then(setTemplates, () => setTemplates([]))
  }, [hasToken])

  const runs: { run: UiRun; live: boolean }[] = []
  if (detail && detail.id === currentId) {
    for (const stored of detail.runs) {
      if (liveHere && stored.id === liveHere.run.id) continue
      runs.push({ run: mergeLive(fromStored(stored), finished.current.get(stored.id)), live: false })
    }
    for (const orphan of orphans.current.get(detail.id) ?? []) runs.push({ run: orphan, live: false })
  }
  if (liveHere) runs.push({ run: liveHere.run, live: true })

  const datasets = detail && detail.id === currentId ? detail.datasets : []
  const asking = Boolean(liveHere && liveHere.run.status === 'running')
  const running = asking || cells !== null
  // A Stop is a request of its own, which the server records as one (a closed connection is
  // something else to it): the question's stream then ends with its `stopped` event. Where the
  // server stopped nothing (the run not started yet, or ended meanwhile), the request is closed;
  // where it sent the Stop on to another replica, the page waits a while longer.
  // So is it when the Stop is not answered soon: the browser sends a few requests to a server at
  // once (six over HTTP/1.1), and with that many tables' pages waiting for the cell, the Stop
  // would wait behind them for ever; closing the cell's own request stops it there too.
  const stop = () => {
    const question = asking ? liveHere : undefined
    const running = cells
    const sessionId = question?.sessionId ?? currentId
    if (!sessionId || (!question && !running)) return
    const runId = question?.run.id
    const close = () => {
      question?.controller.abort()
      running?.abort()
    }
    if (question && !runId) return close()
    const unanswered = setTimeout(close, STOP_ANSWER_MS)
    void api
      .stop(sessionId, runId)
      .catch((): Awaited<ReturnType<typeof api.stop>> => ({ stopped: 0 }))
      .then(({ stopped, pending }) => {
        clearTimeout(unanswered)
        // Sent on to the replica that runs it: closing now would record a lost connection.
        if (pending) return void setTimeout(close, STOP_PENDING_MS)
        if (!stopped) question?.controller.abort()
        running?.abort()
      })
  }
  const stopRef = useRef(stop)
  stopRef.current = stop
  // Moves as cells end (a step stored or finished live, a run or cell over): pages fetched before are stale.
  const [runsEnded, setRunsEnded] = useState(0)
  const wasRunning = useRef(running)
  useEffect(() => {
    if (wasRunning.current && !running) setRunsEnded((n) => n + 1)
    wasRunning.current = running
  }, [running])
  // A restart in another tab or browser reaches this page's grids (kernel-elsewhere.ts); asked
  // only while the session shown has a table of the kernel's.
  const tablesShown = useRef<string | null>(null)
  tablesShown.current = runs.some(({ run }) => run.steps.some((step) => step.results.some((r) => r.frame)))
    ? currentId
    : null
  useEffect(() => watchKernelElsewhere(() => tablesShown.current, lost), [])
  const storedSteps =
    detail && detail.id === currentId ? detail.runs.reduce((n, r) => n + r.steps.length, 0) : 0
  const liveStepsDone = liveHere?.run.steps.filter((step) => !step.running).length ?? 0
  const kernelState = {
    busy: running,
    cellRunning: cells !== null || Boolean(liveHere?.run.steps.some((step) => step.running)),
    stop: () => stopRef.current(),
    endedElsewhere: () => {
      setRunsEnded((n) => n + 1)
      if (currentRef.current) void refreshDetail(currentRef.current)
    },
    restarted: () => {
      lost('restarted')
      if (currentId) tellRestarted(currentId)
    },
    kernelStarts,
    kernelGone,
    cellsEnded: `${currentId}:${storedSteps}:${liveStepsDone}:${runsEnded}`,
  }
  const [keysOpen, setKeysOpen] = useState(false)
  /** The find box: shown, asked for (a new number each time the key is pressed), the match it went to. */
  const [find, setFind] = useState<{ asked: number; match?: FindMatch; nonce: number } | null>(null)
  const [mode, setMode] = useState<'ask' | 'code'>('ask')
  const showsPanel = !page && currentId !== null && detail?.id === currentId
  const sheet = showsPanel && narrow && panelOpen
  /** What the keys act on, as it is when a key is pressed. */
  const keyState = useRef({ followUps: [] as string[], sheet, narrow, showsPanel, keysOpen })
  const lastRun = runs.at(-1)?.run
  keyState.current = {
    followUps: !running && lastRun?.status !== 'running' ? (lastRun?.followUps ?? []) : [],
    sheet,
    narrow,
    showsPanel,
    keysOpen,
  }
  const askRef = useRef(ask)
  askRef.current = ask
  // The page's keys (keys-dialog.tsx lists them): Esc stops whatever runs, from anywhere (the
  // session sheet, a dialog, take it first: they close); the others act when no field has the focus.
  useEffect(() => {
    /** The session panel shown (as a sheet on a narrow screen), then `then` once it is drawn. */
    const toPanel = (then: (panel: HTMLElement) => void) => {
      if (!keyState.current.showsPanel) return
      if (keyState.current.narrow) setPanelOpen(true)
      setTimeout(() => {
        const panel = document.querySelector<HTMLElement>('.session-panel')
        if (panel) then(panel)
      })
    }
    const onKey = (event: KeyboardEvent) => {
      if (event.defaultPrevented) return
      if (event.key === 'Escape') {
        // The key list closes on Esc also before its Close button has the focus (the dialog's
        // own handler takes Esc only from inside it); it does not stop what runs under it.
        if (keyState.current.keysOpen) setKeysOpen(false)
        else stopRef.current()
        return
      }
      if (isTyping(event) || event.ctrlKey || event.metaKey || event.altKey) return
      const focusComposer = () =>
        setTimeout(() =>
          document.querySelector<HTMLElement>('.composer textarea, .composer .cm-content')?.focus(),
        )
      const followUp = (n: number) => () => {
        const question = keyState.current.followUps[n]
        if (question) void askRef.current(question)
      }
      const panelActions: Record<string, () => void> = {
        s: () => toPanel((panel) => panel.focus()),
        f: () =>
          toPanel((panel) =>
            panel
              .querySelector<HTMLElement>('.panel-files button, .panel-files a, .drop-zone input')
              ?.focus(),
          ),
        R: () =>
          toPanel((panel) => {
            const restart = panel.querySelector<HTMLButtonElement>('.restart-kernel')
            restart?.focus()
            if (!restart?.disabled) restart?.click()
          }),
      }
      const actions: Record<string, () => void> = {
        '?': () => setKeysOpen(true),
        '/': () => setFind((open) => ({ nonce: 0, ...open, asked: (open?.asked ?? 0) + 1 })),
        a: () => {
          setMode('ask')
          focusComposer()
        },
        c: () => {
          setMode('code')
          focusComposer()
        },
        // To the Add files button: Enter or Space there opens the file chooser.
        u: () => document.querySelector<HTMLInputElement>('.add-files input[type=file]')?.focus(),
        n: () => startNewRef.current(),
        e: () => document.querySelector<HTMLElement>('.exports a')?.focus(),
        '1': followUp(0),
        '2': followUp(1),
        '3': followUp(2),
      }
      const panelAction = panelActions[event.key]
      const action = actions[event.key]
      if (!panelAction && !action) return
      event.preventDefault()
      if (panelAction) panelAction()
      else if (action && keyState.current.sheet && event.key !== '?') {
        // A key for the page closes the sheet first: it acts once the page under it is live again.
        setPanelOpen(false)
        setTimeout(action)
      } else action?.()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [])
  // Every step's code, in the order it ran: Run below runs those after the edited one.
  const allSteps = runs.filter(({ live: isLive }) => !isLive).flatMap(({ run }) => run.steps)
  const actionsFor = (step: UiStep, run: UiRun): StepActions => ({
    sessionId: currentId ?? '',
    run: (code) => runCells([code]),
    runBelow: (code) => {
      const later = allSteps.slice(allSteps.indexOf(step) + 1).filter((s) => !s.violations?.length)
      return runCells([code, ...later.map((s) => s.code)])
    },
    keepChart: async (index, edit) => {
      if (!currentId || !run.id) throw new Error('this question was not stored')
      await api.saveChart(currentId, { runId: run.id, step: step.step, index }, edit)
    },
  })
  const title = detail && detail.id === currentId ? detail.title || 'Untitled analysis' : 'New analysis'

  return (
    <KernelStateContext.Provider value={kernelState}>
      <div class={`app${dragging ? ' dragging' : ''}${showsPanel ? ' with-panel' : ''}`}>
        <Sidebar
          sessions={sessions}
          currentId={currentId}
          loading={listLoading}
          hasToken={hasToken}
          onNew={startNew}
          onDelete={(session) => void remove(session)}
          onForgetToken={() => {
            token.set(null)
            setHasToken(false)
          }}
        />
        <main class="main">
          <header class="topbar">
            <h1 class="title">{page === 'keys' ? 'API keys' : page === 'admin' ? 'Users' : title}</h1>
            {me && !page && detail && detail.id === currentId && detail.runs.length > 0 && (
              <ShareButton
                key={detail.id}
                sessionId={detail.id}
                onProblem={(error) => setProblem(problemOf(error))}
              />
            )}
            {!page && detail && detail.id === currentId && (
              <button
                type="button"
                class="button secondary small panel-toggle"
                aria-expanded={panelOpen}
                aria-keyshortcuts="s"
                onClick={() => setPanelOpen(!panelOpen)}
              >
                Session
              </button>
            )}
            {!page && detail && detail.id === currentId && detail.runs.length > 0 && (
              <nav class="exports" aria-label="Export">
                <span class="muted">Export</span>
                <a class="button secondary small" href={withToken(exportUrl(detail.id, 'ipynb'))} download>
                  Notebook
                </a>
                <a class="button secondary small" href={withToken(exportUrl(detail.id, 'py'))} download>
                  Python
                </a>
                <a class="button secondary small" href={withToken(exportUrl(detail.id, 'html'))} download>
                  HTML report
                </a>
              </nav>
            )}
            {me && (
              <AccountBar
                me={me}
                onSignOut={async () => {
                  try {
                    location.assign(await account.signOut())
                  } catch (error) {
                    setProblem(problemOf(error))
                  }
                }}
              />
            )}
          </header>
          {find && !page && (
            <FindBar
              runs={runs.map(({ run }) => run)}
              focusAsk={find.asked}
              onGo={(match) => setFind((open) => open && { ...open, match, nonce: open.nonce + 1 })}
              onClose={() => setFind(null)}
            />
          )}
          <div class="scroll">
            <div class="column">
              {problem && (
                <div class="alert" role="alert">
                  <strong>{problem.message}</strong>
                  {problem.hint && <p class="hint">{problem.hint}</p>}
                  <button type="button" class="close" aria-label="Dismiss" onClick={() => setProblem(null)}>
                    ×
                  </button>
                </div>
              )}
              {page === 'keys' && <KeysPage onProblem={(error) => setProblem(problemOf(error))} />}
              {page === 'admin' && me && (
                <AdminPage selfId={me.user.id} onProblem={(error) => setProblem(problemOf(error))} />
              )}
              {!page && !currentId && datasets.length === 0 && uploading.length === 0 && (
                <div class="welcome">
                  <h2>Ask your data a question</h2>
                  <p>
                    Add a CSV, Excel, JSON or Parquet file
                    {sources.length > 0 ? ', or ask about the sources below' : ''}. A model writes Python,
                    Analyst runs it in a sandbox, and you get an answer backed by the numbers, tables and
                    charts the code produced.
                  </p>
                </div>
              )}
              {!page && (
                <>
                  {!currentId && (
                    <TemplatePicker templates={templates} chosen={template} onChoose={setTemplate} />
                  )}
                  <Sources
                    available={sources}
                    chosen={detail && detail.id === currentId ? detail.sources : chosen}
                    fixed={Boolean(currentId)}
                    onToggle={(name, on) =>
                      setChosen((names) => (on ? [...names, name] : names.filter((n) => n !== name)))
                    }
                  />
                  <Datasets
                    datasets={datasets}
                    uploading={uploading}
                    expand={runs.length === 0}
                    onChoose={(files) => void upload(files)}
                    fileUrl={currentId ? (name) => dataFileUrl({ sessionId: currentId }, name) : undefined}
                  />
                  <div class="conversation">
                    {runs.map(({ run, live: isLive }, index) => (
                      <Deferred
                        key={run.id ?? `live-${index}`}
                        eager={
                          isLive ||
                          runs.length <= EAGER_RUNS ||
                          index === runs.length - 1 ||
                          find?.match?.run === index
                        }
                        height={standInHeight(run)}
                        stand={<p class="question">{run.question}</p>}
                      >
                        <Run
                          run={run}
                          live={isLive}
                          actions={isLive ? undefined : actionsFor}
                          reveal={
                            find?.match?.run === index && find.match.step !== undefined
                              ? { step: find.match.step, nonce: find.nonce }
                              : undefined
                          }
                          onFollowUp={
                            !running && index === runs.length - 1
                              ? (question) => void ask(question)
                              : undefined
                          }
                        />
                      </Deferred>
                    ))}
                  </div>
                </>
              )}
              <div ref={bottom} />
            </div>
          </div>
          <div class="composer-wrap">
            <Composer
              running={running}
              hasData={datasets.length > 0}
              followUp={runs.length > 0}
              onAsk={(question) => void ask(question)}
              onRunCode={(code) => runCells([code])}
              mode={mode}
              onMode={setMode}
              onStop={stop}
            />
          </div>
        </main>
        {showsPanel && detail && (
          <SessionPanel
            detail={detail}
            running={running}
            open={panelOpen}
            sheet={sheet}
            onClose={() => setPanelOpen(false)}
            onUpload={(files) => void upload(files)}
          />
        )}
        {dragging && (
          <div class="drop-hint" aria-hidden="true">
            Drop files to add them to this analysis
          </div>
        )}
        {keysOpen && <KeysDialog onClose={() => setKeysOpen(false)} />}
        {tokenAsk && (
          <TokenDialog
            rejected={tokenAsk.rejected}
            onSubmit={(value) => tokenAsk.resolve(value)}
            onCancel={() => tokenAsk.resolve(null)}
          />
        )}
      </div>
    </KernelStateContext.Provider>
  )
}
