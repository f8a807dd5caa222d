/**
 * `analyst serve --allow-network`: an E2B client that asks for `allowInternetAccess: true` gets a
 * sandbox with the host's network, as `--network` sandboxes have locally; one that does not, none.
 * Shown by a server on the host's loopback, which only the first can reach.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { CommandExitError, Sandbox } from '@e2b/code-interpreter'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type E2BServer, startE2BServer } from './server.js'

let e2b: E2BServer
let host: Server
let port: number
beforeAll(async () => {
  e2b = await startE2BServer({ allowNetwork: true })
  host = createServer((_request, response) => response.end('from the host'))
  await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve))
  port = (host.address() as AddressInfo).port
})
afterAll(async () => {
  host?.close()
  await e2b?.close()
})

const fetchHost = () =>
  `python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:${port}', timeout=5).read().decode())"`

describe('E2B SDK: internet access when the server allows it', () => {
  it('gives network to a sandbox that asks for it, and says so', async () => {
    const sandbox = await Sandbox.create({ allowInternetAccess: true })
    try {
      expect((await sandbox.getInfo()).allowInternetAccess).toBe(true)
      expect((await sandbox.commands.run(fetchHost())).stdout).toBe('from the host\n')
    } finally {
      await sandbox.kill()
    }
  })

  it('gives none to a sandbox that does not ask', async () => {
    const sandbox = await Sandbox.create()
    try {
      expect((await sandbox.getInfo()).allowInternetAccess).toBe(false)
      const failed = await sandbox.commands.run(fetchHost()).catch((error: unknown) => error)
      expect(failed).toBeInstanceOf(CommandExitError)
    } finally {
      await sandbox.kill()
    }
  })
})
