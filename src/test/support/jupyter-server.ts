/**
 * A real Jupyter Server (Debian's python3-jupyter-server with python3-ipykernel) for tests and
 * benchmarks: on 127.0.0.1 with a free port, a random token given in the environment (never on
 * the command line, where `ps` shows it), a temporary root, TCP_NODELAY set on its kernel
 * WebSockets; stopped after with its kernels deleted, SIGTERM, then SIGKILL after a grace.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { appendFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

export const PYTHON = '/usr/bin/python3'

/** Jupyter Server config that sets TCP_NODELAY on kernel WebSockets (Tornado leaves Nagle on: ~40 ms a round trip). */
export const NODELAY_CONFIG = `
from jupyter_server.services.kernels.handlers import ZMQChannelsHandler
_open = ZMQChannelsHandler.open
def _open_nodelay(self, *args, **kwargs):
    self.set_nodelay(True)
    return _open(self, *args, **kwargs)
ZMQChannelsHandler.open = _open_nodelay
`

export function jupyterServerInstalled(): boolean {
  return (
    existsSync('/usr/lib/python3/dist-packages/jupyter_server') &&
    existsSync('/usr/lib/python3/dist-packages/ipykernel')
  )
}

import { freePort } from './ports.js'

export { freePort }

/** The last of a server's log (stderr), for the error that says why it did not start. */
export function keepLog(child: ChildProcess): { text: string } {
  const log = { text: '' }
  child.stderr?.on('data', (chunk: Buffer) => {
    log.text = (log.text + chunk.toString()).slice(-20_000)
    // For debugging a test: the server's log, appended to this file.
    if (process.env.ANALYST_TEST_JUPYTER_LOG) appendFileSync(process.env.ANALYST_TEST_JUPYTER_LOG, chunk)
  })
  return log
}

/** Polls `serving` until it says yes; fails with the log when the process exits or a minute passes. */
export async function waitUntilServing(
  child: ChildProcess,
  log: { text: string },
  name: string,
  serving: () => Promise<boolean>,
) {
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}):\n${log.text}`)
    if (await serving().catch(() => false)) return
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`${name} did not start within 60 s:\n${log.text}`)
    }
    await sleep(100)
  }
}

/** SIGTERM, then SIGKILL after a grace of 5 s. */
export async function terminate(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  if ((await Promise.race([exited, sleep(5000).then(() => 'timeout')])) === 'timeout') {
    child.kill('SIGKILL')
    await exited
  }
}

export interface RunningJupyter {
  url: string
  token: string
  /** The server's root: kernels start here, the Contents API serves it. */
  root: string
  port: number
  process: ChildProcess
  /** GET on the server's API with the token. */
  api<T = unknown>(path: string, init?: RequestInit): Promise<{ status: number; body: T }>
  kernelIds(): Promise<string[]>
  stop(): Promise<void>
}

export interface JupyterServerOptions {
  /** Set TCP_NODELAY on the kernel WebSockets. @default true */
  nodelay?: boolean
  /** More lines for jupyter_server_config.py. */
  config?: string
  /** Command-line settings, e.g. `--ServerApp.iopub_data_rate_limit=100000`. */
  args?: string[]
}

export async function startJupyterServer(options: JupyterServerOptions = {}): Promise<RunningJupyter> {
  const base = mkdtempSync(join(tmpdir(), 'analyst-jupyter-'))
  const root = join(base, 'root')
  const configDir = join(base, 'config')
  for (const dir of [root, configDir]) rmSync(dir, { recursive: true, force: true })
  const { mkdirSync } = await import('node:fs')
  mkdirSync(root)
  mkdirSync(configDir)
  writeFileSync(
    join(configDir, 'jupyter_server_config.py'),
    `${options.nodelay === false ? '' : NODELAY_CONFIG}\n${options.config ?? ''}\n`,
  )
  const token = randomBytes(24).toString('hex')
  const port = await freePort()
  const child = spawn(
    PYTHON,
    [
      '-m',
      'jupyter_server',
      '--ServerApp.ip=127.0.0.1',
      `--ServerApp.port=${port}`,
      '--ServerApp.port_retries=0',
      `--ServerApp.root_dir=${root}`,
      '--ServerApp.open_browser=False',
      ...(process.getuid?.() === 0 ? ['--allow-root'] : []),
      ...(options.args ?? []),
    ],
    {
      env: {
        PATH: '/usr/bin:/bin',
        HOME: base,
        LANG: 'C.UTF-8',
        JUPYTER_TOKEN: token,
        JUPYTER_CONFIG_DIR: configDir,
        JUPYTER_CONFIG_PATH: configDir,
        JUPYTER_DATA_DIR: join(base, 'data'),
        JUPYTER_RUNTIME_DIR: join(base, 'runtime'),
        JUPYTER_PLATFORM_DIRS: '1',
      },
      // A kernel started without a path (as a gateway does) runs here, not in the project.
      cwd: base,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  )
  const log = keepLog(child)
  const url = `http://127.0.0.1:${port}/`
  const api = async <T>(path: string, init: RequestInit = {}) => {
    const response = await fetch(new URL(path, url), {
      ...init,
      headers: { Authorization: `token ${token}`, ...(init.headers as Record<string, string>) },
    })
    const text = await response.text()
    return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T }
  }
  await waitUntilServing(child, log, 'jupyter_server', async () => (await api('api/kernels')).status === 200)
  const kernelIds = async () =>
    ((await api<Array<{ id: string }>>('api/kernels')).body ?? []).map((k) => k.id)
  return {
    url,
    token,
    root,
    port,
    process: child,
    api,
    kernelIds,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        for (const id of await kernelIds().catch(() => [])) {
          await api(`api/kernels/${id}`, { method: 'DELETE' }).catch(() => {})
        }
      }
      await terminate(child)
      rmSync(base, { recursive: true, force: true })
    },
  }
}
