/**
 * A DataFrame as the session's kernel holds it: the server pages, sorts, filters (a pandas query)
 * and searches the whole frame there, and sends only the page shown (drawn by GridTable, TanStack
 * Table in manual mode). Column statistics on demand, the selection downloads as CSV, XLSX or
 * Parquet, and Copy as code turns the sort and filter into a pandas cell. A table the kernel no
 * longer holds says so and offers to run its step again, at once when the page learns the kernel
 * restarted (here, in another tab or browser: kernel-elsewhere.ts).
 *
 * The kernel runs one thing at a time: while a cell runs, a page not fetched before (or the column
 * statistics) waits for it, and the grid says so, keeping the rows it shows, with Stop at hand for
 * a cell of this page; the server says so too (grid-request.ts), also of a cell started elsewhere
 * (another tab, an MCP client), whose end then refreshes the session and the pages kept, and of
 * a kernel that starts and replays the session's cells or makes a download's part. A
 * question whose model is thinking holds no kernel: its requests are answered at once, unsaid. A page fetched since the last
 * cell ended comes from the browser's cache (grid-pages.ts). A newer page, or another selection,
 * aborts the request of the one before (and of the column statistics), which the server then
 * drops (server/frames.ts).
 */
import { useContext, useEffect, useRef, useState } from 'preact/hooks'
import type { ColumnStats } from '../../session/frames.js'
import { ApiError, withToken } from '../api.js'
import { count, num } from '../format.js'
import { cachedPage, keepPage } from '../grid-pages.js'
import { gridRequest, type Wait } from '../grid-request.js'
import type { KernelGone } from '../kernel-elsewhere.js'
import { KernelStateContext } from '../kernel-state.js'
import { GridTable } from './grid-table.js'
import { ScrollBox } from './scroll-box.js'

const PAGE = 25
const CELL: Wait = { reason: 'cell', message: '' }
/** What a grid says once the page learned that the kernel's tables are gone (the server's words for a closed kernel). */
const LOST: Record<KernelGone, string> = {
  restarted:
    "This table is not in the kernel now (it was restarted): the session's next cell or question rebuilds its state",
  'not-running':
    "This table is not in the kernel now (it was restarted, paused or closed since): the session's next cell or question rebuilds its state",
}

interface Page {
  rows: number
  offset: number
  data: Record<string, unknown[]>
}

/** The grid's sort and filter as a pandas cell, from the expression that made the table. */
export function gridCode(source: string, state: { sort: string; filter: string; search: string }): string {
  const lines = [`table = ${source.trim() || '_'}`]
  if (state.filter) lines.push(`table = table.query(${JSON.stringify(state.filter)})`)
  if (state.search)
    lines.push(
      `table = table[table.astype(str).apply(lambda column: column.str.contains(${JSON.stringify(state.search)}, case=False, regex=False)).any(axis=1)]`,
    )
  if (state.sort) {
    const descending = state.sort.startsWith('-')
    const column = descending ? state.sort.slice(1) : state.sort
    lines.push(
      `table = table.sort_values(${JSON.stringify(column)}, ascending=${descending ? 'False' : 'True'})`,
    )
  }
  lines.push('table')
  return lines.join('\n')
}

function Histogram({ counts }: { counts: number[] }) {
  const top = Math.max(1, ...counts)
  return (
    <svg class="histogram" viewBox={`0 0 ${counts.length * 6} 20`} aria-hidden="true">
      {counts.map((count, i) => (
        <rect key={i} x={i * 6} y={20 - (count / top) * 20} width={5} height={(count / top) * 20} />
      ))}
    </svg>
  )
}

/**
 * A column's statistics in three lines of fixed height, the same in every column (its type and
 * nulls; its range or distinct count; its histogram or top values), each cut to one line with the
 * whole in its title: under names of any length, each line stands level with its neighbours'.
 */
function StatLines({ stats }: { stats: ColumnStats }) {
  const range =
    stats.min !== undefined && stats.max !== undefined
      ? `${num(stats.min)} to ${num(stats.max)}${stats.mean !== undefined ? `, mean ${num(stats.mean)}` : ''}`
      : stats.unique !== undefined
        ? `${count(stats.unique)} distinct`
        : ''
  const top = stats.top?.map(([value, n]) => `${value} (${count(n)})`).join(', ') ?? ''
  const kind = `${stats.type} · ${count(stats.nulls)} null${stats.nulls === 1 ? '' : 's'}`
  return (
    <div class="column-stats">
      <span title={kind}>{kind}</span>
      <span class="muted" title={range || undefined}>
        {range}
      </span>
      {stats.histogram ? (
        <Histogram counts={stats.histogram.counts} />
      ) : (
        <span class="muted" title={top || undefined}>
          {top}
        </span>
      )}
    </div>
  )
}

export function FrameGrid({
  sessionId,
  frame,
  source,
  onRunAgain,
}: {
  sessionId: string
  frame: { id: string; rows: number }
  /** The expression the table came from, for Copy as code. */
  source: string
  onRunAgain?: () => void
}) {
  const [sort, setSort] = useState('')
  const [filter, setFilter] = useState('')
  const [filterDraft, setFilterDraft] = useState('')
  const [search, setSearch] = useState('')
  const [offset, setOffset] = useState(0)
  const [page, setPage] = useState<Page | null>(null)
  /** Why the last request failed; `page` when it was the page's (the rows shown are from before). */
  /**
   * Why the last request failed; `page` when it was the page's (the rows shown are from before);
   * `lost` when the table went with a kernel restart the page saw: said at once, the rows kept
   * (dimmed) until the next cell rebuilds the state, which may make the table again.
   */
  const [problem, setProblem] = useState<{
    message: string
    gone: boolean
    page?: boolean
    lost?: boolean
  } | null>(null)

  const [stats, setStats] = useState<Record<string, ColumnStats> | null>(null)
  const [copied, setCopied] = useState<string | null>(null)
  /** A page asked for and not answered yet. */
  const [waiting, setWaiting] = useState(false)
  /** What the server said the page waits for. */
  const [held, setHeld] = useState<Wait | null>(null)
  /** What the server said the column statistics wait for (until they come). */
  const [statsHeld, setStatsHeld] = useState<Wait | null>(null)
  /** The column statistics asked for and not answered yet. */
  const statsRequest = useRef<AbortController | null>(null)
  const kernel = useContext(KernelStateContext)
  /** The kernel starts the grid has heard of. */
  const startsSeen = useRef(kernel.kernelStarts)
  // The kernel restarted (here, or elsewhere as the page learned): the table is not in it now.
  // Said at once, without a request (there is no kernel to ask); the rows stay, dimmed, and the
  // next request after a cell (which rebuilds the state, and may make the table again) says what
  // then holds. A grid that says its table is gone already keeps its words.
  useEffect(() => {
    if (kernel.kernelStarts === startsSeen.current) return
    startsSeen.current = kernel.kernelStarts
    setProblem((now) =>
      now?.gone || now?.lost
        ? now
        : { message: LOST[kernel.kernelGone], gone: false, page: true, lost: true },
    )
  }, [kernel.kernelStarts])
  const base = `/api/sessions/${encodeURIComponent(sessionId)}/results/${encodeURIComponent(frame.id)}`
  const query = new URLSearchParams({
    ...(sort ? { sort } : {}),
    ...(filter ? { filter } : {}),
    ...(search ? { search } : {}),
  })

  const url = `${base}/rows?${query}&offset=${offset}&limit=${PAGE}`
  const { cellsEnded } = kernel
  /** Read when a waited page comes: whether the cell it waited for was this page's. */
  const kernelNow = useRef(kernel)
  kernelNow.current = kernel
  // Another page or selection: the statistics asked for before are not waited for (the server
  // drops them if they still wait, so the page does not queue behind them).
  useEffect(
    () => () => {
      statsRequest.current?.abort()
      setStatsHeld(null)
    },
    [url],
  )
  useEffect(() => {
    setHeld(null)
    const seen = cachedPage<Page>(url, cellsEnded)
    if (seen) {
      setPage(seen)
      setProblem(null)
      setWaiting(false)
      return
    }
    const controller = new AbortController()
    setWaiting(true)
    gridRequest<Page>(url, { signal: controller.signal, onWaiting: setHeld }).then(
      ({ value: next, waited }) => {
        keepPage(url, cellsEnded, next)
        // A cell not of this page ended: its end is not seen otherwise (one of this page's moves
        // `cellsEnded` when it ends).
        if (waited && !kernelNow.current.busy) kernelNow.current.endedElsewhere()
        if (controller.signal.aborted) return
        setPage(next)
        setProblem(null)
        setWaiting(false)
        setHeld(null)
      },
      (error: unknown) => {
        if (controller.signal.aborted) return
        setWaiting(false)
        setHeld(null)
        setProblem({
          message: error instanceof Error ? error.message : String(error),
          gone: error instanceof ApiError && error.status === 410,
          page: true,
        })
      },
    )
    return () => controller.abort()
  }, [url, cellsEnded])
  useEffect(() => setStats(null), [filter, search])

  const shown = page ? Math.max(0, ...Object.values(page.data).map((values) => values.length)) : 0
  const loadStats = () => {
    statsRequest.current?.abort()
    const controller = new AbortController()
    statsRequest.current = controller
    return gridRequest<{ columns: Record<string, ColumnStats> }>(`${base}/columns?${query}`, {
      signal: controller.signal,
      onWaiting: (wait) => {
        if (!controller.signal.aborted) setStatsHeld(wait)
      },
    }).then(
      ({ value, waited }) => {
        if (waited && !kernelNow.current.busy) kernelNow.current.endedElsewhere()
        if (controller.signal.aborted) return
        setStatsHeld(null)
        setStats(value.columns)
      },
      (error: unknown) => {
        if (controller.signal.aborted) return
        setStatsHeld(null)
        setProblem({ message: error instanceof Error ? error.message : String(error), gone: false })
      },
    )
  }

  // The page's own running cell is known here before the server says so; what the server said
  // wins (the kernel may still be starting), and the statistics' wait shows when the page has none.
  const pageWait = waiting ? (held ?? (kernel.cellRunning ? CELL : null)) : null
  const wait = pageWait ?? statsHeld

  const stale = waiting || Boolean(problem?.page)

  if (problem?.gone)
    return (
      <div class="grid-gone" role="status">
        {problem.message}.{' '}
        {onRunAgain && (
          <button type="button" class="button secondary small" onClick={onRunAgain}>
            Run its step again
          </button>
        )}
      </div>
    )
  return (
    <section class="frame-grid" aria-label="Table">
      <div class="grid-tools">
        <input
          type="search"
          aria-label="Search the table"
          placeholder="Search"
          value={search}
          onChange={(event) => {
            setOffset(0)
            setSearch(event.currentTarget.value)
          }}
        />
        <form
          class="grid-filter"
          onSubmit={(event) => {
            event.preventDefault()
            setOffset(0)
            setFilter(filterDraft.trim())
          }}
        >
          <input
            aria-label="Filter (a pandas query)"
            placeholder="Filter, e.g. order_value > 100"
            value={filterDraft}
            onInput={(event) => setFilterDraft(event.currentTarget.value)}
          />
          <button type="submit" class="button secondary small">
            Filter
          </button>
        </form>
        {/* A toggle: pressed, the statistics show under each column's name; pressed again, they go. */}
        <button
          type="button"
          class="button secondary small"
          aria-pressed={stats !== null}
          onClick={() => (stats ? setStats(null) : void loadStats())}
        >
          Column stats
        </button>
        <a
          class="button secondary small"
          href={withToken(`${base}/rows?${query}&format=csv`)}
          download="table.csv"
        >
          CSV
        </a>
        <a
          class="button secondary small"
          href={withToken(`${base}/rows?${query}&format=xlsx`)}
          download="table.xlsx"
        >
          XLSX
        </a>
        <a
          class="button secondary small"
          href={withToken(`${base}/rows?${query}&format=parquet`)}
          download="table.parquet"
        >
          Parquet
        </a>
        <button
          type="button"
          class="button secondary small"
          onClick={() => {
            const code = gridCode(source, { sort, filter, search })
            setCopied(code)
            void navigator.clipboard?.writeText(code).catch(() => undefined)
          }}
        >
          Copy as code
        </button>
      </div>
      {problem && (
        <p class="grid-problem" role="alert">
          {problem.message}
          {problem.lost && onRunAgain && (
            <>
              {' '}
              <button type="button" class="button secondary small" onClick={onRunAgain}>
                Run its step again
              </button>
            </>
          )}
        </p>
      )}
      {copied && (
        <ScrollBox class="code copied" pre>
          {copied}
        </ScrollBox>
      )}
      {/* Rows not of the selection shown above them (its page is on its way, or failed) are dimmed
          and said to be so: a sort arrow over rows from before the sort misleads. */}
      {page && (
        <div class={stale ? 'grid-rows stale' : 'grid-rows'} aria-busy={waiting}>
          <GridTable
            data={page.data}
            sort={sort}
            onSort={(next) => {
              setOffset(0)
              setSort(next)
            }}
            headExtra={(name) => stats?.[name] && <StatLines stats={stats[name]} />}
          />
        </div>
      )}
      {/* The live region stays while the note comes and goes: a screen reader reads what is put in
          one it knows, not one that arrives with its text. */}
      <div aria-live="polite">
        {wait && (
          // Not a bare spinner: what it waits for, and the way to end the wait (a cell started
          // elsewhere is stopped where it was started).
          <p class="grid-waiting">
            <span class="spinner" aria-hidden="true" />{' '}
            {wait.reason === 'cell' ? (
              <>
                Waiting for the running cell…{' '}
                {kernel.busy ? (
                  <button type="button" class="button secondary small" onClick={kernel.stop}>
                    Stop the cell
                  </button>
                ) : (
                  <span class="muted">(started in another tab or client)</span>
                )}
              </>
            ) : (
              wait.message
            )}
          </p>
        )}
      </div>
      <div class="table-foot">
        {page ? (
          <>
            <span role="status">
              {page.rows === 0
                ? 'No rows'
                : `Rows ${count(page.offset + 1)}–${count(page.offset + shown)} of ${count(page.rows)}${page.rows !== frame.rows ? ` (of ${count(frame.rows)})` : ''}`}
            </span>
            {stale && (
              <span class={waiting ? 'muted grid-loading' : 'muted'}>
                {waiting ? ' Loading…' : ' (the rows from before the change)'}
              </span>
            )}{' '}
            <button
              type="button"
              class="link"
              disabled={offset === 0}
              onClick={() => setOffset(Math.max(0, offset - PAGE))}
            >
              Previous
            </button>
            <button
              type="button"
              class="link"
              disabled={offset + PAGE >= page.rows}
              onClick={() => setOffset(offset + PAGE)}
            >
              Next
            </button>
          </>
        ) : waiting ? (
          <span class="muted">Loading…</span>
        ) : (
          // The first page failed (said above): not "Loading…" for ever.
          <span class="muted">No rows shown</span>
        )}
      </div>
    </section>
  )
}
