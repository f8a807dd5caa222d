/**
 * A stand-in for Jupyter Enterprise Gateway (not installable here), in front of a real Jupyter
 * Server: it answers as the gateway does where the two differ (from enterprise_gateway's source:
 * services/kernels/handlers.py, mixins.py, enterprisegatewayapp.py) and forwards the rest.
 * - `Authorization: token …` checked against its own token: 401 otherwise (TokenAuthorizationMixin)
 * - `GET /api` gives `gateway_version`; there is no Contents API (404)
 * - `GET /api/kernels` is 403 unless listing is allowed (EG_LIST_KERNELS)
 * - the start request's `env`: only KERNEL_* (and EG_CLIENT_ENVS) pass, as strings without `$`,
 *   backticks or newlines, at most 4096 characters (400 otherwise); kernels do not start in the
 *   server's root (no `path`); the request blocks while the "pod" starts
 * - kernel channels proxied as they are; `dropSockets()` ends them as a network that drops does,
 *   the kernels running on.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import WebSocket, { WebSocketServer } from 'ws'
import type { RunningJupyter } from '../../src/test/support/jupyter-server.js'

export interface FakeGateway {
  url: string
  token: string
  /** The `env` of each kernel start request, as received. */
  startEnvs: Array<Record<string, string>>
  /** Ends every kernel WebSocket open through the gateway (both ways), the kernels left running. */
  dropSockets(): void
  close(): Promise<void>
}

const PROHIBITED = /[$`\n\r\0]/

export async function startFakeGateway(
  upstream: RunningJupyter,
  options: { token: string; startDelayMs?: number; clientEnvs?: string[]; listKernels?: boolean },
): Promise<FakeGateway> {
  const startEnvs: Array<Record<string, string>> = []
  const authorized = (request: IncomingMessage) => {
    const url = new URL(request.url ?? '/', 'http://gateway')
    const header = request.headers.authorization ?? ''
    const given = url.searchParams.get('token') ?? (header.startsWith('token ') ? header.slice(6) : undefined)
    return given === options.token
  }
  const reply = (response: ServerResponse, status: number, body?: unknown) => {
    response.writeHead(status, { 'Content-Type': 'application/json' })
    response.end(body === undefined ? '' : JSON.stringify(body))
  }
  const forward = async (method: string, path: string, body?: string) => {
    const response = await fetch(new URL(path, upstream.url), {
      method,
      headers: { Authorization: `token ${upstream.token}`, 'Content-Type': 'application/json' },
      body,
    })
    const text = await response.text()
    return { status: response.status, body: text ? JSON.parse(text) : undefined }
  }
  const server = createServer(async (request, response) => {
    try {
      if (!authorized(request)) return reply(response, 401, { reason: 'Unauthorized', message: '' })
      const path = new URL(request.url ?? '/', 'http://gateway').pathname
      const chunks: Buffer[] = []
      for await (const chunk of request) chunks.push(chunk as Buffer)
      const text = Buffer.concat(chunks).toString()
      if (path === '/api' || path === '/api/')
        return reply(response, 200, { version: '2.5.0', gateway_version: '3.2.3' })
      if (path.startsWith('/api/contents')) return reply(response, 404, { reason: 'Not Found', message: '' })
      if (path === '/api/kernels' && request.method === 'GET' && !options.listKernels) {
        return reply(response, 403, { reason: 'Forbidden', message: '' })
      }
      if (path === '/api/kernels' && request.method === 'POST') {
        const model = text ? JSON.parse(text) : {}
        const env: Record<string, unknown> = model.env ?? {}
        for (const [key, value] of Object.entries(env)) {
          if (!key.startsWith('KERNEL_') && !options.clientEnvs?.includes(key)) continue
          if (typeof value !== 'string')
            return reply(response, 400, { message: `Environment variable '${key}' value must be a string` })
          if (value.length > 4096 || PROHIBITED.test(value)) {
            return reply(response, 400, {
              message: `Environment variable '${key}' contains prohibited characters`,
            })
          }
        }
        startEnvs.push(env as Record<string, string>)
        await sleep(options.startDelayMs ?? 0) // the kernel's pod being scheduled and started
        const started = await forward('POST', 'api/kernels', JSON.stringify({ name: model.name }))
        return reply(response, started.status, started.body)
      }
      const forwarded = await forward(request.method ?? 'GET', path.slice(1), text || undefined)
      return reply(response, forwarded.status, forwarded.body)
    } catch (error) {
      reply(response, 500, { message: String(error) })
    }
  })
  // The subprotocol is the upstream server's choice among the client's (a gateway's own handler).
  const sockets = new WebSocketServer({
    noServer: true,
    handleProtocols: (_offered, request) => chosen.get(request) || false,
  })
  const chosen = new WeakMap<IncomingMessage, string>()
  server.on('upgrade', (request, socket, head) => {
    if (!authorized(request)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\n\r\n')
      return
    }
    const url = new URL(request.url ?? '/', 'http://gateway')
    const offered = (request.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean)
    const target = new WebSocket(
      new URL(`${url.pathname.slice(1)}${url.search}`, upstream.url.replace('http', 'ws')),
      offered,
      {
        headers: { Authorization: `token ${upstream.token}` },
      },
    )
    target.once('open', () => chosen.set(request, target.protocol))
    target.once('open', () => {
      sockets.handleUpgrade(request, socket, head, (client) => {
        client.on('message', (data, binary) => target.send(data, { binary }))
        target.on('message', (data, binary) => client.send(data, { binary }))
        client.on('close', () => target.close())
        target.on('close', () => client.close())
      })
    })
    target.once('error', () => socket.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}/`,
    token: options.token,
    startEnvs,
    dropSockets() {
      for (const client of sockets.clients) client.terminate()
    },
    async close() {
      for (const client of sockets.clients) client.terminate()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
