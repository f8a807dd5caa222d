/**
 * MCP over Streamable HTTP, for `/mcp` on `analyst serve`: the SDK's web-standard transport (a
 * `Request` in, a `Response` out, so Hono serves it without a Node bridge), one transport and one
 * Analyst session per MCP session. The MCP session id is the Analyst session's id, so a client can
 * also upload data to `/api/sessions/<id>/files`.
 *
 * What the route in front of it does: the bearer token (a session belongs to the token that opened
 * it). What it does itself: the Origin check that the MCP spec asks of local servers (against DNS
 * rebinding), and the end of sessions on DELETE or after an idle time.
 * @module
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import { AnalystError, known, retryAfterOf } from '../errors.js'
import { advice } from '../fixes.js'
import type { SessionService, SignedInUser } from '../session/index.js'
import { AllowedFolders } from './folders.js'
import { McpConnection, type McpSources } from './server.js'

export interface McpHttpOptions {
  service: SessionService
  /** Folders `add_data` may take files from. @default none */
  folders?: AllowedFolders
  /** End an MCP session after this long without a request. @default 15 minutes */
  idleMs?: number
  /** Browser origins allowed besides those of this machine (http://localhost:…, http://127.0.0.1:…). */
  origins?: string[]
  /**
   * What list_data and profile_data say of the sources a session got (serve's sources): the
   * defaults, or those the client named in `/mcp?sources=a,b`.
   */
  sources?: (names: readonly string[]) => McpSources | undefined
}

interface Open {
  connection: McpConnection
  transport: WebStandardStreamableHTTPServerTransport
  owner: string | null
  idle?: NodeJS.Timeout
}

const LOOPBACK_HOST = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/

function jsonRpcError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: '2.0', error: { code, message }, id: null }, { status })
}

export class McpHttp {
  private readonly open = new Map<string, Open>()
  private closed = false

  constructor(private readonly options: McpHttpOptions) {}

  /** MCP sessions open now. */
  get sessions(): number {
    return this.open.size
  }

  /**
   * Answers one request to `/mcp` for the caller that `owner` names (null: no tokens), maybe a
   * signed-in `user`.
   */
  async handle(request: Request, owner: string | null, user?: SignedInUser): Promise<Response> {
    const refused = this.checkOrigin(request)
    if (refused) return refused
    const id = request.headers.get('mcp-session-id')
    if (id) {
      const found = this.open.get(id)
      // Another token's session is as good as none.
      if (!found || found.owner !== owner) return jsonRpcError(404, -32001, 'Session not found')
      this.touch(id, found)
      found.connection.actFor(user)
      return found.transport.handleRequest(request)
    }
    if (request.method !== 'POST')
      return jsonRpcError(400, -32000, 'Bad Request: send Mcp-Session-Id, or initialize first')
    let body: unknown
    try {
      body = await request.json()
    } catch {
      return jsonRpcError(400, -32700, 'Parse error: the body is not JSON')
    }
    if (!isInitializeRequest(body))
      return jsonRpcError(400, -32000, 'Bad Request: send Mcp-Session-Id, or initialize first')
    if (this.closed) return jsonRpcError(503, -32000, 'The server is shutting down')
    return this.start(request, body, owner, user)
  }

  /**
   * A new MCP session: a new Analyst session, its own server and transport. `?sources=a,b` picks
   * the host's sources by name, as `POST /api/sessions` does (an MCP client has no other place to).
   */
  private async start(
    request: Request,
    body: unknown,
    owner: string | null,
    user: SignedInUser | undefined,
  ): Promise<Response> {
    const picked = new URL(request.url).searchParams.get('sources')
    let connection: McpConnection
    try {
      connection = await McpConnection.open(this.options.service, {
        owner,
        ...(user ? { user } : {}),
        folders: this.options.folders ?? AllowedFolders.none,
        uploadHint:
          'Files can also be uploaded with POST /api/sessions/<Mcp-Session-Id>/files (multipart, the same token).',
        ...(picked !== null
          ? {
              sourceNames: picked
                .split(',')
                .map((name) => name.trim())
                .filter(Boolean),
            }
          : {}),
        ...(this.options.sources ? { describeSources: this.options.sources } : {}),
      })
    } catch (thrown) {
      // A source the caller may not use, or none offered: said to the client, with what to do. The
      // database or the disk failing is the server's state, not the request's: its own status.
      const error = known(thrown)
      if (!AnalystError.isInstance(error)) throw error
      const what = advice(error, 'mcp')
      const text = what ? `${error.message}. ${what}` : error.message
      if (error.status < 500) return jsonRpcError(400, -32602, text)
      const refused = jsonRpcError(error.status, -32000, text)
      const retryAfter = retryAfterOf(error)
      if (retryAfter !== undefined) refused.headers.set('retry-after', String(retryAfter))
      return refused
    }
    const id = connection.sessionId
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
    })
    const open: Open = { connection, transport, owner }
    this.open.set(id, open)
    transport.onclose = () => void this.end(id)
    await connection.server.connect(transport)
    this.touch(id, open)
    return transport.handleRequest(request, { parsedBody: body })
  }

  /** The session ends: on DELETE, idle, or shutdown. Its sandbox stops. */
  private async end(id: string) {
    const open = this.open.get(id)
    if (!open) return
    this.open.delete(id)
    clearTimeout(open.idle)
    await open.connection
      .end()
      .catch((error) => console.error('analyst serve: ending an MCP session:', error))
  }

  private touch(id: string, open: Open) {
    clearTimeout(open.idle)
    const idleMs = this.options.idleMs ?? 15 * 60_000
    if (idleMs <= 0) return
    open.idle = setTimeout(() => {
      // A tool still working (a long analysis) keeps its session.
      if (open.connection.busy > 0) this.touch(id, open)
      else void open.transport.close()
    }, idleMs)
    open.idle.unref()
  }

  /**
   * A browser page may only reach this from an origin of this machine (or one configured): a page
   * elsewhere that rebinds its DNS name to 127.0.0.1 sends its own Origin, and is refused.
   * Clients that are not browsers send no Origin.
   */
  private checkOrigin(request: Request): Response | undefined {
    const origin = request.headers.get('origin')
    if (!origin) return undefined
    if (this.options.origins?.includes(origin)) return undefined
    let host: string | undefined
    try {
      host = new URL(origin).hostname
    } catch {
      host = undefined
    }
    if (host && LOOPBACK_HOST.test(host)) return undefined
    return jsonRpcError(403, -32000, `Forbidden: origin ${origin} may not use this server`)
  }

  /** Ends every MCP session (their sandboxes stop). */
  async close(): Promise<void> {
    this.closed = true
    await Promise.all([...this.open.values()].map((open) => open.transport.close()))
    await Promise.all([...this.open.keys()].map((id) => this.end(id)))
  }
}
