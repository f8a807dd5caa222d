/**
 * The REST side of a Jupyter server (Jupyter Server, a JupyterHub user's server, Enterprise
 * Gateway): one place that adds the token, bounds each request in time and turns HTTP failures
 * into Analyst's errors with hints in the words of the engine's settings.
 * @module
 */
import {
  type AnalystError,
  NotFoundError,
  RateLimitError,
  SandboxError,
  SandboxUnavailableError,
  UnauthorizedError,
} from '../../errors.js'

export const SETTINGS_HINT =
  'Check ANALYST_JUPYTER_URL and that the server is running (analyst doctor --sandbox jupyter).'
export const TOKEN_HINT =
  "Set ANALYST_JUPYTER_TOKEN to the server's token (for JupyterHub, an API token that may access the user's server)."

export interface HttpOptions {
  /** The server's base URL, e.g. http://127.0.0.1:8888/ or https://hub.example.org/user/alice/. */
  url: string
  token?: string
  /** Each request's time limit. @default 30_000 */
  timeoutMs?: number
}

export interface RequestOptions {
  body?: unknown
  /** This request's own time limit (a gateway's kernel start waits for its pod). */
  timeoutMs?: number
  signal?: AbortSignal
  /** Statuses returned to the caller instead of thrown (e.g. 404 for "not there"). */
  accept?: number[]
}

/** The cause a failed fetch gives, e.g. ECONNREFUSED. */
function networkCode(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause
  return cause?.code ?? cause?.message ?? (error as Error).message
}

export class JupyterHttp {
  readonly baseUrl: string
  readonly token: string | undefined
  private readonly timeoutMs: number

  constructor(options: HttpOptions) {
    let url: URL
    try {
      url = new URL(options.url)
    } catch {
      throw new SandboxUnavailableError(`ANALYST_JUPYTER_URL is not a URL: ${options.url}`, {
        hint: "Give the Jupyter server's address, e.g. http://127.0.0.1:8888/.",
      })
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new SandboxUnavailableError(`ANALYST_JUPYTER_URL must be http: or https:, not ${url.protocol}`)
    }
    url.search = ''
    url.hash = ''
    if (!url.pathname.endsWith('/')) url.pathname += '/'
    this.baseUrl = url.href
    this.token = options.token || undefined
    this.timeoutMs = options.timeoutMs ?? 30_000
  }

  url(path: string): string {
    return new URL(path.replace(/^\//, ''), this.baseUrl).href
  }

  /** The WebSocket URL of a path (ws: or wss:). */
  wsUrl(path: string): string {
    return this.url(path).replace(/^http/, 'ws')
  }

  headers(): Record<string, string> {
    // `token` is the scheme Jupyter Server, JupyterHub and Enterprise Gateway all accept.
    return this.token ? { Authorization: `token ${this.token}` } : {}
  }

  async request<T = unknown>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<{ status: number; body: T }> {
    const timeout = AbortSignal.timeout(options.timeoutMs ?? this.timeoutMs)
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout
    const where = this.url(path)
    let response: Response
    try {
      response = await fetch(where, {
        method,
        headers: {
          ...this.headers(),
          ...(options.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        },
        body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
        signal,
        // A redirect means another service (a hub's login page), never the answer asked for.
        redirect: 'manual',
      })
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason
      if (timeout.aborted) {
        throw new SandboxUnavailableError(
          `The Jupyter server at ${this.baseUrl} did not answer ${method} ${path} within ${Math.round((options.timeoutMs ?? this.timeoutMs) / 1000)} s`,
          { hint: SETTINGS_HINT, cause: error },
        )
      }
      throw new SandboxUnavailableError(
        `Cannot reach the Jupyter server at ${this.baseUrl} (${networkCode(error)})`,
        { hint: SETTINGS_HINT, cause: error },
      )
    }
    const text = await response.text()
    let body: unknown = text
    try {
      body = text ? JSON.parse(text) : undefined
    } catch {
      // not JSON: an HTML error page, a proxy's message
    }
    if (response.ok || options.accept?.includes(response.status)) {
      return { status: response.status, body: body as T }
    }
    throw this.failure(method, path, response.status, body)
  }

  private failure(method: string, path: string, status: number, body: unknown): AnalystError {
    const said =
      typeof body === 'object' && body !== null
        ? String(
            (body as { message?: unknown; reason?: unknown }).message ||
              (body as { reason?: unknown }).reason ||
              '',
          )
        : String(body ?? '').slice(0, 200)
    const what = `${method} ${path} on the Jupyter server at ${this.baseUrl}: HTTP ${status}${said ? ` (${said})` : ''}`
    if (/Resource Limit/i.test(said) || status === 429) {
      return new RateLimitError(`The Jupyter server is at its kernel limit: ${what}`, {
        hint: "Stop kernels you no longer use, or ask the server's operator to raise its limit (EG_MAX_KERNELS on a gateway).",
      })
    }
    // Jupyter Server answers a wrong token with 403, Enterprise Gateway and JupyterHub with 401.
    if (status === 401 || status === 403) {
      const problem = this.token ? 'refused the token' : 'wants a token'
      return new UnauthorizedError(`The Jupyter server ${problem}: ${what}`, { hint: TOKEN_HINT })
    }
    if (status === 404) return new NotFoundError(what, { hint: SETTINGS_HINT })
    return new SandboxError(what)
  }
}
