/**
 * `analyst doctor --sandbox jupyter`: the settings, the server and its token, a kernel that runs a
 * cell (and how long a round trip takes), leftovers of crashed runs, and what Analyst cannot
 * promise on this engine.
 * @module
 */
import type { Check } from '../capabilities.js'
import { missingCapabilities } from '../capabilities.js'
import { Sandbox } from '../sandbox.js'
import { JUPYTER_GATEWAY_CAPABILITIES, JupyterProvider, type JupyterProviderOptions } from './backend.js'
import { connect } from './server.js'

/** A round trip slower than this on a cell as small as `1 + 1` points at Nagle's delay on the server. */
const SLOW_ROUND_TRIP_MS = 30

function failed(name: string, error: unknown): Check {
  const { message, hint } = error as { message?: string; hint?: string }
  return { name, ok: false, detail: message ?? String(error), fix: hint, essential: true }
}

export async function checkJupyter(settings: JupyterProviderOptions): Promise<Check[]> {
  const checks: Check[] = []
  if (!settings.url) {
    checks.push({
      name: 'jupyter url',
      ok: false,
      detail: 'ANALYST_JUPYTER_URL is not set',
      fix: 'export ANALYST_JUPYTER_URL=http://HOST:8888/ ANALYST_JUPYTER_TOKEN=… (a JupyterHub: its address and ANALYST_JUPYTERHUB_USER)',
      essential: true,
    })
    return checks
  }
  checks.push({ name: 'jupyter url', ok: true, detail: settings.url, essential: true })
  let noContentsApi = false
  try {
    const server = await connect(settings)
    noContentsApi = !server.contents
    const kind = server.kind === 'enterprise-gateway' ? 'Enterprise Gateway' : 'Jupyter Server'
    checks.push({
      name: 'jupyter server',
      ok: true,
      detail: `${kind} ${server.version} at ${server.http.baseUrl}${server.hubUser ? ` (JupyterHub server of ${server.hubUser})` : ''}; token accepted; files through ${server.contents ? 'the Contents API' : 'the kernel'}; kernels: ${server.kernelNames.join(', ') || 'unknown'}`,
      essential: true,
    })
  } catch (error) {
    checks.push(failed('jupyter server', error))
    return checks
  }
  const provider = new JupyterProvider(settings)
  try {
    const removed = await provider.cleanUpLeftovers()
    checks.push({
      name: 'leftover kernels',
      ok: true,
      detail: removed.length
        ? `shut down ${removed.length} kernel(s) left by crashed Analyst runs`
        : 'none left by crashed runs',
      essential: false,
    })
    const started = Date.now()
    const sandbox = await Sandbox.create({ provider })
    const startMs = Date.now() - started
    try {
      await sandbox.runCode('1 + 1')
      const times: number[] = []
      for (let i = 0; i < 5; i++) {
        const at = performance.now()
        await sandbox.runCode('1 + 1')
        times.push(performance.now() - at)
      }
      const median = times.sort((a, b) => a - b)[2] ?? 0
      checks.push({
        name: 'jupyter kernel',
        ok: true,
        detail: `${settings.kernelName ?? 'python3'} started and set up in ${(startMs / 1000).toFixed(1)} s`,
        essential: true,
      })
      checks.push({
        name: 'round trip',
        ok: median < SLOW_ROUND_TRIP_MS,
        detail: `1 + 1 takes ${median.toFixed(1)} ms`,
        fix: "The server delays small WebSocket messages (Nagle): set TCP_NODELAY on its kernel sockets in jupyter_server_config.py (see SECURITY.md, 'Jupyter engine').",
        essential: false,
      })
    } finally {
      await sandbox.kill()
    }
  } catch (error) {
    checks.push(failed('jupyter kernel', error))
  }
  checks.push({
    name: 'isolation',
    ok: false,
    detail: `the Jupyter server's, not Analyst's: ${missingCapabilities(noContentsApi ? JUPYTER_GATEWAY_CAPABILITIES : provider.capabilities).join('; ')}. The guard still checks code.`,
    fix: "Run the server's kernels in containers with no network and resource limits (e.g. Enterprise Gateway on Kubernetes with network policies); see SECURITY.md.",
    essential: false,
  })
  return checks
}
