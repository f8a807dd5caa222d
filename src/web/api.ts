/**
 * The HTTP API as the browser calls it: one request helper that adds the token, turns JSON errors
 * into `ApiError`, and on a 401 asks the user for the token once and retries.
 * @module
 */
import type { AgentEvent } from '../agent/events.js'
import type {
  ApiError as ApiErrorBody,
  CellView,
  DatasetInfo,
  SessionDetail,
  SessionSummary,
  SourceInfo,
  StreamOnlyEvent,
  TemplateView,
} from '../server/types.js'
import type { StoredChartEdit } from '../store/types.js'
import { readSse } from './sse.js'

export type StreamEvent = AgentEvent | StreamOnlyEvent

const TOKEN_KEY = 'analyst.token'

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly hint?: string,
  ) {
    super(message)
    this.name = 'ApiError'
  }
}

/** The token the user entered, kept in localStorage. */
export const token = {
  get(): string | null {
    try {
      return localStorage.getItem(TOKEN_KEY)
    } catch {
      return null
    }
  },
  set(value: string | null) {
    try {
      if (value) localStorage.setItem(TOKEN_KEY, value)
      else localStorage.removeItem(TOKEN_KEY)
    } catch {
      // private mode without storage: the token lasts until the page reloads
    }
  },
}

/**
 * Asks the user for a token (the UI sets this); resolves to the token, or null when they cancel.
 * `rejected` is true when the stored token was refused.
 */
let askForToken: (rejected: boolean) => Promise<string | null> = async () => null

export function onTokenNeeded(ask: (rejected: boolean) => Promise<string | null>) {
  askForToken = ask
}

/**
 * API paths are relative, so the UI works under any mount point; a shared session's page
 * (`…/s/<id>`) is one folder down.
 */
const BASE = typeof location === 'undefined' ? '' : /\/s\/[^/]+$/.test(location.pathname) ? '../' : ''

export function apiUrl(path: string): string {
  return `${BASE}${path.replace(/^\//, '')}`
}

/** Set once the browser is signed in (GET /api/me): sent on every state-changing request. */
let csrfToken: string | null = null
/** Where a 401 goes when the server signs users in: its sign-in page. */
let signInUrl: string | null = null

export function setSignIn(options: { csrfToken: string | null; signInUrl: string }) {
  csrfToken = options.csrfToken
  signInUrl = options.signInUrl
}

/** A URL for `<img src>` and download links: GETs take the token as `?token=`. */
export function withToken(url: string): string {
  const value = token.get()
  if (!value) return apiUrl(url)
  return `${apiUrl(url)}${url.includes('?') ? '&' : '?'}token=${encodeURIComponent(value)}`
}

async function errorOf(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`.trim()
  let hint: string | undefined
  try {
    const body = (await response.json()) as Partial<ApiErrorBody>
    if (body.error?.message) {
      message = body.error.message
      hint = body.error.hint
    }
  } catch {
    // not JSON: keep the status line
  }
  if (response.status === 413 && !hint) hint = 'The file is larger than the server accepts.'
  return new ApiError(message, response.status, hint)
}

/** Fetches with the token; on 401 asks for a token and tries again until it works or the user cancels. */
async function send(path: string, init: RequestInit = {}): Promise<Response> {
  let rejected = false
  for (;;) {
    const headers = new Headers(init.headers)
    const value = token.get()
    if (value) headers.set('Authorization', `Bearer ${value}`)
    if (csrfToken && init.method && init.method !== 'GET') headers.set('X-CSRF-Token', csrfToken)
    const response = await fetch(apiUrl(path), { ...init, headers })
    if (response.status === 401 && signInUrl && response.headers.get('link')?.includes('rel="login"')) {
      // The sign-in ended (idle, expired, signed out elsewhere): sign in again, then come back.
      location.assign(signInUrl)
      throw await errorOf(response)
    }
    if (response.status !== 401) {
      if (!response.ok) throw await errorOf(response)
      return response
    }
    const refused = await errorOf(response)
    const entered = await askForToken(rejected || Boolean(value))
    if (!entered) throw refused
    token.set(entered)
    rejected = true
  }
}

export async function json<T>(path: string, init?: RequestInit): Promise<T> {
  const response = await send(path, init)
  return (await response.json()) as T
}

function sessionPath(id: string): string {
  return `/api/sessions/${encodeURIComponent(id)}`
}

/** Where an artifact is served; each segment of the name is encoded, the slashes kept. */
export function artifactUrl(sessionId: string, name: string): string {
  return `${sessionPath(sessionId)}/artifacts/${name.split('/').map(encodeURIComponent).join('/')}`
}

/** Where a session's data file downloads as uploaded; a shared session's, when its owner allows. */
export function dataFileUrl(where: { sessionId: string } | { shareId: string }, name: string): string {
  const base =
    'sessionId' in where ? sessionPath(where.sessionId) : `/api/shared/${encodeURIComponent(where.shareId)}`
  return `${base}/files/${encodeURIComponent(name)}`
}

export function exportUrl(sessionId: string, format: 'ipynb' | 'py' | 'html'): string {
  return `${sessionPath(sessionId)}/export?format=${format}`
}

/** A JSON request body. */
export function jsonInit(method: string, body?: unknown): RequestInit {
  return {
    method,
    headers: { 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  }
}

export { send }

export const api = {
  listSessions: () => json<SessionSummary[]>('/api/sessions'),
  getSession: (id: string) => json<SessionDetail>(sessionPath(id)),
  /** Sources left out: the server's defaults; template left out: the server's default environment. */
  createSession: (options: { title?: string; sources?: string[]; template?: string } = {}) =>
    json<{ id: string; sources: string[] }>('/api/sessions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(options),
    }),
  listSources: () => json<SourceInfo[]>('/api/sources'),
  listTemplates: () => json<TemplateView[]>('/api/templates'),
  deleteSession: async (id: string) => {
    await send(sessionPath(id), { method: 'DELETE' })
  },
  upload: (id: string, file: File) => {
    const form = new FormData()
    form.append('file', file, file.name)
    return json<DatasetInfo>(`${sessionPath(id)}/files`, { method: 'POST', body: form })
  },
  /** Keeps a person's edit of a chart with its result (an empty edit: the chart as drawn). */
  saveChart: async (
    id: string,
    where: { runId: string; step: number; index: number },
    edit: StoredChartEdit,
  ) => {
    const path = `${sessionPath(id)}/runs/${encodeURIComponent(where.runId)}/steps/${where.step}/results/${where.index}/chart`
    await send(path, jsonInit('PUT', edit))
  },
  /**
   * Stops the session's question `runId` (left out: every question and cell of the session): the
   * server records it as stopped. Says how many it stopped (none: they had ended), and `pending`
   * when the replica that runs it had not answered yet.
   */
  stop: (id: string, runId?: string) =>
    json<{ stopped: number; pending?: true }>(
      `${sessionPath(id)}/stop`,
      jsonInit('POST', runId ? { runId } : {}),
    ),
  /** Runs a person's cell in the session's kernel; aborting the signal stops it. */
  runCell: (id: string, code: string, signal?: AbortSignal) =>
    json<CellView>(`${sessionPath(id)}/cells`, { ...jsonInit('POST', { code }), signal }),
  /** Asks a question; calls `onEvent` for each event of the stream, resolves when it ends. */
  ask: async (
    id: string,
    question: string,
    onEvent: (event: StreamEvent) => void,
    signal?: AbortSignal,
  ): Promise<void> => {
    const response = await send(`${sessionPath(id)}/ask`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ question }),
      signal,
    })
    if (!response.body) throw new ApiError('The server sent no stream', response.status)
    await readSse(response.body, (message) => {
      let data: unknown
      try {
        data = JSON.parse(message.data)
      } catch {
        return
      }
      if (data === null || typeof data !== 'object') return
      // The type is the SSE event name; the data may or may not repeat it.
      onEvent({ ...(data as object), type: message.event } as StreamEvent)
    })
  },
}
