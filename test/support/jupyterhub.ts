/**
 * A real JupyterHub (Debian's jupyterhub 3.0 with its configurable-http-proxy) on 127.0.0.1 with
 * free ports: dummy authentication, one user `alice` whose server the simple local spawner starts
 * (a Jupyter Server 1.23 single-user app, as root with --allow-root), and a service `analyst` whose
 * API token (given in the environment) may start users' servers and reach them. Stopped after:
 * the hub stops the servers it spawned and its proxy; SIGKILL after a grace.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  freePort,
  keepLog,
  PYTHON,
  terminate,
  waitUntilServing,
} from '../../src/test/support/jupyter-server.js'

export const HUB_USER = 'alice'

const CONFIG = `
import os
c = get_config()
base = os.environ['HUB_BASE']
c.JupyterHub.bind_url = 'http://127.0.0.1:%s' % os.environ['HUB_PORT']
c.JupyterHub.hub_bind_url = 'http://127.0.0.1:%s' % os.environ['HUB_INTERNAL_PORT']
c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:%s' % os.environ['HUB_PROXY_API_PORT']
c.JupyterHub.db_url = 'sqlite:///%s/hub.sqlite' % base
c.JupyterHub.cookie_secret_file = '%s/cookie_secret' % base
c.JupyterHub.authenticator_class = 'dummy'
c.Authenticator.allowed_users = {'${HUB_USER}'}
c.JupyterHub.spawner_class = 'simple'
c.SimpleLocalProcessSpawner.home_dir_template = base + '/home/{username}'
c.Spawner.args = ['--allow-root'] if os.getuid() == 0 else []
c.Spawner.environment = {'JUPYTERHUB_SINGLEUSER_APP': 'jupyter_server.serverapp.ServerApp'}
c.JupyterHub.services = [{'name': 'analyst', 'api_token': os.environ['ANALYST_SERVICE_TOKEN']}]
c.JupyterHub.load_roles = [
    {'name': 'analyst', 'scopes': ['servers', 'access:servers', 'read:users'], 'services': ['analyst']},
]
`

export function jupyterhubInstalled(): boolean {
  return (
    existsSync('/usr/lib/python3/dist-packages/jupyterhub') && existsSync('/usr/bin/configurable-http-proxy')
  )
}

export interface RunningHub {
  /** The hub's public address (its proxy). */
  url: string
  /** The `analyst` service's API token. */
  token: string
  stop(): Promise<void>
}

export async function startJupyterHub(): Promise<RunningHub> {
  const base = mkdtempSync(join(tmpdir(), 'analyst-hub-'))
  writeFileSync(join(base, 'jupyterhub_config.py'), CONFIG)
  const token = randomBytes(24).toString('hex')
  const [port, internal, proxyApi] = [await freePort(), await freePort(), await freePort()]
  const child = spawn(PYTHON, ['-m', 'jupyterhub', '-f', join(base, 'jupyterhub_config.py')], {
    cwd: base,
    env: {
      PATH: '/usr/bin:/bin',
      HOME: base,
      LANG: 'C.UTF-8',
      // Debian's configurable-http-proxy finds its modules there (a Node from elsewhere does not look).
      NODE_PATH: '/usr/share/nodejs',
      HUB_BASE: base,
      HUB_PORT: String(port),
      HUB_INTERNAL_PORT: String(internal),
      HUB_PROXY_API_PORT: String(proxyApi),
      ANALYST_SERVICE_TOKEN: token,
      CONFIGPROXY_AUTH_TOKEN: randomBytes(24).toString('hex'),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  const log = keepLog(child)
  const url = `http://127.0.0.1:${port}/`
  await waitUntilServing(child, log, 'jupyterhub', async () => (await fetch(`${url}hub/api`)).status === 200)
  return {
    url,
    token,
    async stop() {
      await terminate(child)
      rmSync(base, { recursive: true, force: true })
    },
  }
}
