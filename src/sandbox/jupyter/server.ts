/**
 * Finding out what is at ANALYST_JUPYTER_URL (a Jupyter Server, a JupyterHub, an Enterprise
 * Gateway) and the kernel calls they share: start, interrupt, restart, delete.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { SandboxUnavailableError } from '../../errors.js'
import { JupyterHttp, SETTINGS_HINT } from './http.js'
import { defaultRecordDir } from './leftovers.js'

export interface JupyterSettings {
  /** A Jupyter Server, a JupyterHub user's server, an Enterprise Gateway, or a JupyterHub's root with `hubUser`. */
  url: string
  token?: string
  /** @default 'python3' */
  kernelName?: string
  /** Sent in the kernel start request: `KERNEL_*` variables for Enterprise Gateway (others ignore it). */
  kernelEnv?: Record<string, string>
  /** On a JupyterHub: whose server to use (started when it is not running). Default: the token's owner. */
  hubUser?: string
  /** How long a kernel (or a hub user's server) may take to start. @default 180_000 (a gateway waits for its pod) */
  createTimeoutMs?: number
  /** Any other request's limit. @default 30_000 */
  requestTimeoutMs?: number
}

export type ServerKind = 'jupyter-server' | 'enterprise-gateway'

export interface ServerInfo {
  http: JupyterHttp
  kind: ServerKind
  version: string
  /** The server has a Contents API (files do not go through the kernel). */
  contents: boolean
  /** Set when the URL was a JupyterHub: the user whose server this is. */
  hubUser?: string
  kernelNames: string[]
}

/** Characters Enterprise Gateway refuses in a variable (they could reach a shell on its side). */
const PROHIBITED = /[$`\n\r\0]/

/** KERNEL_* variables of an environment: what Jupyter's own gateway client sends, too. */
export function kernelEnvFrom(env: NodeJS.ProcessEnv): Record<string, string> {
  const picked: Record<string, string> = {}
  for (const [key, value] of Object.entries(env)) {
    if (key.startsWith('KERNEL_') && value !== undefined) picked[key] = value
  }
  return picked
}

export function checkKernelEnv(env: Record<string, string>) {
  for (const [key, value] of Object.entries(env)) {
    if (!key.startsWith('KERNEL_')) {
      throw new SandboxUnavailableError(`${key} cannot be sent in the kernel start request`, {
        hint: 'Only KERNEL_* variables reach a kernel through Enterprise Gateway; pass others as envs.',
      })
    }
    if (PROHIBITED.test(value) || value.length > 4096) {
      throw new SandboxUnavailableError(
        `${key} has characters a gateway refuses ($, backticks, newlines) or is too long`,
        {
          hint: 'Give it a plain value of at most 4096 characters.',
        },
      )
    }
  }
}

interface HubServer {
  ready?: boolean
  pending?: string | null
  url?: string
}

/** The URL of a hub user's server, started through the hub API when it is not running. */
async function hubUserServer(
  hub: JupyterHttp,
  settings: JupyterSettings,
): Promise<{ url: string; user: string }> {
  let user = settings.hubUser
  if (!user) {
    const { body } = await hub.request<{ name?: string; kind?: string }>('GET', 'hub/api/user')
    if (body.kind !== 'user' || !body.name) {
      throw new SandboxUnavailableError(
        `ANALYST_JUPYTER_URL is a JupyterHub and the token belongs to ${body.kind ?? 'no'} ${body.name ?? 'user'}`,
        {
          hint: 'Set ANALYST_JUPYTERHUB_USER to the user whose server Analyst should use.',
        },
      )
    }
    user = body.name
  }
  const path = `hub/api/users/${encodeURIComponent(user)}`
  const deadline = Date.now() + (settings.createTimeoutMs ?? 180_000)
  let started = false
  for (;;) {
    const { body } = await hub.request<{ servers?: Record<string, HubServer> }>('GET', path)
    const server = body.servers?.['']
    if (server?.ready && server.url) return { url: new URL(server.url, hub.baseUrl).href, user }
    if (!server && !started) {
      await hub.request('POST', `${path}/server`, { accept: [400] })
      started = true
    }
    if (Date.now() > deadline) {
      throw new SandboxUnavailableError(
        `${user}'s server on the JupyterHub at ${hub.baseUrl} did not start in time`,
        {
          hint: "Check the hub's spawner logs.",
        },
      )
    }
    await sleep(250)
  }
}

const REDIRECTS_OR_NOT_FOUND = [301, 302, 303, 307, 308, 404]

/** What is at the settings' URL, with the token checked and the kernel name known. */
export async function connect(settings: JupyterSettings): Promise<ServerInfo> {
  const timeoutMs = settings.requestTimeoutMs ?? 30_000
  let http = new JupyterHttp({ url: settings.url, token: settings.token, timeoutMs })
  let hubUser: string | undefined
  let api = await http.request<{ version?: string; gateway_version?: string }>('GET', 'api', {
    accept: REDIRECTS_OR_NOT_FOUND,
  })
  // A hub's root redirects (or says 404) where a server answers; its API is under hub/.
  if (api.status !== 200) {
    const hub = await http.request<{ version?: string }>('GET', 'hub/api', { accept: REDIRECTS_OR_NOT_FOUND })
    if (hub.status !== 200) {
      throw new SandboxUnavailableError(
        `No Jupyter server at ${http.baseUrl} (GET api answered ${api.status})`,
        {
          hint: SETTINGS_HINT,
        },
      )
    }
    const found = await hubUserServer(http, settings)
    hubUser = found.user
    http = new JupyterHttp({ url: found.url, token: settings.token, timeoutMs })
    api = await http.request('GET', 'api')
  }
  const kind: ServerKind = api.body.gateway_version ? 'enterprise-gateway' : 'jupyter-server'
  // An authenticated call: a wrong token is told here, before any kernel starts.
  const specs = await http.request<{ default?: string; kernelspecs?: Record<string, unknown> }>(
    'GET',
    'api/kernelspecs',
  )
  const kernelNames = Object.keys(specs.body.kernelspecs ?? {})
  const wanted = settings.kernelName ?? 'python3'
  if (kernelNames.length > 0 && !kernelNames.includes(wanted)) {
    throw new SandboxUnavailableError(`The Jupyter server has no kernel named ${wanted}`, {
      hint: `It has: ${kernelNames.join(', ')}.`,
      fix: { setting: 'jupyterKernel', example: kernelNames[0] },
    })
  }
  let contents = false
  if (kind === 'jupyter-server') {
    const probe = await http.request('GET', 'api/contents?content=0', { accept: [404, 405] })
    contents = probe.status === 200
  }
  return {
    http,
    kind,
    version: String(api.body.gateway_version ?? api.body.version ?? 'unknown'),
    contents,
    hubUser,
    kernelNames,
  }
}

export interface KernelModel {
  id: string
  name: string
  execution_state?: string
}

export function startKernel(
  server: ServerInfo,
  settings: JupyterSettings,
  signal?: AbortSignal,
): Promise<KernelModel> {
  const env = settings.kernelEnv ?? {}
  return server.http
    .request<KernelModel>('POST', 'api/kernels', {
      // path '' starts the kernel in the server's root, where the Contents API sees its workspace.
      body: { name: settings.kernelName ?? 'python3', path: '', ...(Object.keys(env).length ? { env } : {}) },
      timeoutMs: settings.createTimeoutMs ?? 180_000,
      signal,
    })
    .then(({ body }) => body)
}

export async function deleteKernel(http: JupyterHttp, id: string): Promise<void> {
  await http.request('DELETE', `api/kernels/${encodeURIComponent(id)}`, { accept: [404] })
}

export async function interruptKernel(http: JupyterHttp, id: string): Promise<void> {
  await http.request('POST', `api/kernels/${encodeURIComponent(id)}/interrupt`, { accept: [404] })
}

export async function restartKernel(http: JupyterHttp, id: string): Promise<void> {
  await http.request('POST', `api/kernels/${encodeURIComponent(id)}/restart`, { timeoutMs: 120_000 })
}

/** The kernel's model, or undefined when the server has no such kernel (any more). */
export async function getKernel(http: JupyterHttp, id: string): Promise<KernelModel | undefined> {
  const { status, body } = await http.request<KernelModel>('GET', `api/kernels/${encodeURIComponent(id)}`, {
    accept: [404],
  })
  return status === 404 ? undefined : body
}

/** The engine's settings from its environment variables, and the command line's `--jupyter-kernel`. */
export function jupyterSettings(
  env: NodeJS.ProcessEnv,
  options: { jupyterKernel?: string } = {},
): JupyterSettings & { recordDir: string } {
  const startSeconds = env.ANALYST_JUPYTER_START_TIMEOUT
    ? Number(env.ANALYST_JUPYTER_START_TIMEOUT)
    : undefined
  if (startSeconds !== undefined && !(startSeconds > 0)) {
    throw new SandboxUnavailableError(
      `ANALYST_JUPYTER_START_TIMEOUT must be a number of seconds, not ${env.ANALYST_JUPYTER_START_TIMEOUT}`,
    )
  }
  return {
    url: env.ANALYST_JUPYTER_URL ?? '',
    token: env.ANALYST_JUPYTER_TOKEN || undefined,
    kernelName: options.jupyterKernel ?? (env.ANALYST_JUPYTER_KERNEL || 'python3'),
    kernelEnv: kernelEnvFrom(env),
    hubUser: env.ANALYST_JUPYTERHUB_USER || undefined,
    createTimeoutMs: startSeconds === undefined ? undefined : startSeconds * 1000,
    recordDir: defaultRecordDir(env),
  }
}
