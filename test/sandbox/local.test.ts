/**
 * The local backend: the shared conformance suite, then what only a real jail on this machine can
 * show: isolation, limits, timeouts, dying kernels, teardown, the pool, parallel sandboxes.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CommandExitError, LocalProvider, Sandbox } from '../../src/index.js'
import { getRuntime } from '../../src/sandbox/local/runtime.js'
import { describeConformance } from '../../src/test/conformance.js'

const provider = new LocalProvider({ poolSize: 0, interruptGraceMs: 1000 })
const create = (options: Parameters<typeof Sandbox.create>[0] = {}) =>
  Sandbox.create({ provider, ...options })
const MiB = 1024 ** 2

describeConformance({ name: 'local', create })

/** Host uids whose processes are alive, from /proc. */
function liveUids(): Set<number> {
  const uids = new Set<number>()
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const uid = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)?.[1]
      if (uid) uids.add(Number(uid))
    } catch {
      // exited meanwhile
    }
  }
  return uids
}

function sandboxDir(sandbox: Sandbox): string {
  return join(getRuntime().own, `sb-${sandbox.sandboxId}`)
}

async function sandboxUid(sandbox: Sandbox): Promise<number> {
  return statSync(join(sandboxDir(sandbox), 'work')).uid
}

describe('local sandbox: isolation', () => {
  let sandbox: Sandbox
  let hostDir: string
  const secret = `sk-test-${Math.random().toString(36).slice(2)}`
  beforeAll(async () => {
    hostDir = mkdtempSync(join(tmpdir(), 'analyst-host-'))
    writeFileSync(join(hostDir, 'marker.txt'), 'host only')
    writeFileSync(join(hostDir, 'input.csv'), 'a,b\n1,2\n')
    process.env.ANALYST_TEST_API_KEY = secret
    sandbox = await create({ data: [join(hostDir, 'input.csv')], envs: { GIVEN: 'by caller' } })
  })
  afterAll(async () => {
    delete process.env.ANALYST_TEST_API_KEY
    await sandbox?.kill()
    rmSync(hostDir, { recursive: true, force: true })
  })

  it('cannot reach a server on the host loopback', async () => {
    let connections = 0
    const server = createServer((socket) => {
      connections++
      socket.destroy()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as { port: number }
    try {
      const execution = await sandbox.runCode(
        `import socket\ntry:\n    socket.create_connection(('127.0.0.1', ${port}), timeout=2)\n    print('connected')\nexcept OSError as e:\n    print('blocked', type(e).__name__)`,
      )
      expect(execution.logs.stdout.join('')).toMatch(/^blocked/)
      expect(connections).toBe(0)
    } finally {
      server.close()
    }
  })

  it('has no network interface but loopback, and no name resolution', async () => {
    const execution = await sandbox.runCode(
      "import socket, os\nprint(sorted(os.listdir('/sys/class/net')) if os.path.exists('/sys/class/net') else 'no sysfs')\ntry:\n    socket.getaddrinfo('example.com', 80)\n    print('resolved')\nexcept OSError as e:\n    print('no dns')",
    )
    const out = execution.logs.stdout.join('')
    expect(out).not.toContain('resolved')
    expect(out).toContain('no dns')
    expect(out).not.toMatch(/eth|ens|veth|wl/)
  })

  it('sees none of the host files: not the host /tmp, not /root, not the project', async () => {
    const execution = await sandbox.runCode(
      `import os\nfor p in [${JSON.stringify(join(hostDir, 'marker.txt'))}, '/root', ${JSON.stringify(process.cwd())}, '/etc/shadow', '/etc/hostname']:\n    print(p, os.path.exists(p))`,
    )
    expect(execution.logs.stdout.join('')).not.toContain('True')
  })

  it('sees its input read-only at data/<name>', async () => {
    const execution = await sandbox.runCode(
      "import pandas as pd\nprint(pd.read_csv('data/input.csv').to_dict('list'))\ntry:\n    open('data/input.csv', 'a').write('x')\nexcept OSError as e:\n    print(type(e).__name__)",
    )
    expect(execution.logs.stdout).toEqual(["{'a': [1], 'b': [2]}\n", 'PermissionError\n'])
  })

  it('starts from a clean environment: no host variable, the caller envs, sane defaults', async () => {
    const execution = await sandbox.runCode(
      "import os\nenv = dict(os.environ)\ninit = open('/proc/1/environ').read()\n(sorted(env), env['GIVEN'], env['HOME'], env['MPLBACKEND'], env['LANG'], 'ANALYST_TEST_API_KEY' in init)",
    )
    expect(execution.error).toBeUndefined()
    expect(execution.text).not.toContain(secret)
    expect(execution.text).not.toContain('ANALYST_TEST_API_KEY')
    expect(execution.text).toContain(
      "'by caller', '/home/user', 'module://analyst_mpl_backend', 'C.UTF-8', False",
    )
    const init = await sandbox.runCode("open('/proc/1/environ').read()")
    expect(init.text).not.toContain(secret)
  })

  it('has its own process IDs and runs as an unprivileged user', async () => {
    const execution = await sandbox.runCode(
      "import os\npids = [p for p in os.listdir('/proc') if p.isdigit()]\n(os.getuid(), os.geteuid(), len(pids) < 10, open('/proc/self/status').read().split('NoNewPrivs:')[1].split()[0])",
    )
    expect(execution.text).toBe("(1000, 1000, True, '1')")
    const uid = await sandboxUid(sandbox)
    if (process.getuid?.() === 0) expect(uid).toBeGreaterThanOrEqual(610_000)
  })
})

describe('local sandbox: timeouts and dying kernels', () => {
  let sandbox: Sandbox
  beforeAll(async () => {
    sandbox = await create()
  })
  afterAll(async () => {
    await sandbox?.kill()
  })

  it('interrupts a cell whose timeout comes before its code has started, and keeps the state', async () => {
    // The interrupt reaches the kernel while it still reads or compiles the cell (a long list
    // literal takes a while): it must be held for the cell, not dropped. A long grace period, so
    // that a busy machine's slow compile is not taken for a cell that ignores the interrupt.
    const patient = new LocalProvider({ poolSize: 0, interruptGraceMs: 20_000 })
    const own = await Sandbox.create({ provider: patient })
    try {
      await own.runCode('kept = 789')
      const slowToCompile = `import time\nlong = [${'0, '.repeat(3000)}]\ntime.sleep(30)`
      // Interrupts that come at every moment: before the cell is read, while it compiles, as it starts.
      for (const timeoutMs of [1, 1, 2, 5, 10, 20, 40, 80]) {
        const execution = await own.runCode(slowToCompile, { timeoutMs })
        expect(execution.error?.name, `timeout ${timeoutMs} ms`).toBe('TimeoutError')
        expect(execution.error?.value).toMatch(/variables and imports are kept/)
        expect((await own.runCode('kept')).text).toBe('789')
      }
    } finally {
      await own.kill()
    }
  })

  it('says the exit code of a kernel that exits mid-cell', async () => {
    const execution = await sandbox.runCode('import os\nos._exit(3)')
    expect(execution.error?.name).toBe('KernelDied')
    expect(execution.error?.value).toMatch(/exit code 3/)
  })

  it('reports a segfault the same way', async () => {
    const execution = await sandbox.runCode('import ctypes\nctypes.string_at(0)')
    expect(execution.error?.name).toBe('KernelDied')
    expect(execution.error?.value).toMatch(/SIGSEGV|signal 11/)
    expect((await sandbox.runCode('2 * 21')).text).toBe('42')
  })
})

describe('local sandbox: limits', () => {
  let sandbox: Sandbox
  beforeAll(async () => {
    sandbox = await create({
      limits: {
        memoryBytes: 512 * MiB,
        processes: 32,
        fileSizeBytes: 8 * MiB,
        workspaceBytes: 32 * MiB,
        cpuSeconds: 2,
        openFiles: 64,
        outputBytes: MiB,
      },
    })
  })
  afterAll(async () => {
    await sandbox?.kill()
  })

  it('bounds memory: a large allocation fails with MemoryError and the kernel lives on', async () => {
    const execution = await sandbox.runCode('block = bytearray(1024 * 1024 * 1024)')
    expect(execution.error?.name).toBe('MemoryError')
    expect((await sandbox.runCode('1 + 1')).text).toBe('2')
  })

  it('bounds processes', async () => {
    const execution = await sandbox.runCode(
      "import subprocess\nprocs = []\ntry:\n    for i in range(100):\n        procs.append(subprocess.Popen(['sleep', '30']))\nexcept OSError as e:\n    print('stopped at', len(procs), type(e).__name__)\nfor p in procs:\n    p.kill(); p.wait()",
    )
    const out = execution.logs.stdout.join('')
    expect(out).toMatch(/^stopped at \d+ BlockingIOError/)
    expect(Number(out.split(' ')[2])).toBeLessThan(32)
  })

  it('bounds the size of one file', async () => {
    const execution = await sandbox.runCode("open('big.bin', 'wb').write(b'x' * (9 * 1024 * 1024))")
    expect(execution.error).toBeDefined()
    expect(['OSError', 'KernelDied']).toContain(execution.error?.name)
  })

  // The quota is a size-limited tmpfs that only root can mount.
  it.skipIf(process.getuid?.() !== 0)('bounds the workspace as a whole', async () => {
    const execution = await sandbox.runCode(
      "import os\ntry:\n    for i in range(10):\n        with open(f'part{i}.bin', 'wb') as f:\n            f.write(b'x' * (6 * 1024 * 1024))\nexcept OSError as e:\n    print('full', e.errno)",
    )
    expect(execution.logs.stdout.join('')).toBe('full 28\n') // ENOSPC
    await sandbox.runCode("import glob\nfor p in glob.glob('part*.bin'): os.remove(p)")
  })

  it('bounds CPU time per cell', async () => {
    // 2 CPU seconds can take many more on a loaded machine: the wall-clock timeout stays out of the way.
    const execution = await sandbox.runCode('while True:\n    pass', { timeoutMs: 100_000 })
    expect(execution.error?.name).toBe('CpuTimeExceeded')
    expect((await sandbox.runCode('1 + 2')).text).toBe('3')
  }, 130_000)

  it('bounds open files', async () => {
    const execution = await sandbox.runCode(
      "files = []\ntry:\n    for i in range(200):\n        files.append(open('/dev/null'))\nexcept OSError as e:\n    print('stopped', e.errno)\nfor f in files: f.close()",
    )
    expect(execution.logs.stdout.join('')).toBe('stopped 24\n') // EMFILE
  })

  it('drops output beyond the cap, with a marker', async () => {
    // 200,000 lines in 100 writes: a flood that costs little CPU, so that this sandbox's CPU limit
    // (2 s, which 200,000 separate prints can reach on a loaded machine) does not end it first.
    const execution = await sandbox.runCode(
      "for i in range(100):\n    print(''.join('line %d\\n' % j for j in range(i * 2000, (i + 1) * 2000)), end='')",
    )
    expect(execution.error).toBeUndefined()
    const kept = execution.logs.stdout.join('').length
    expect(kept).toBeLessThanOrEqual(MiB)
    expect(kept).toBeGreaterThan(MiB / 2)
    expect(execution.logs.stderr.join('')).toContain('output truncated')
    expect((await sandbox.runCode("print('fresh')")).logs.stdout).toEqual(['fresh\n'])
  })
})

describe('local sandbox: artifacts and links', () => {
  let sandbox: Sandbox
  beforeAll(async () => {
    sandbox = await create()
  })
  afterAll(async () => {
    await sandbox?.kill()
  })

  it('does not report or follow links that code plants', async () => {
    const execution = await sandbox.runCode(
      "import os\nos.symlink('/etc/passwd', 'passwd-link')\nos.symlink('/etc', 'etc-link')\nopen('real.txt', 'w').write('ok')",
    )
    expect(execution.artifacts.map((a) => a.name)).toEqual(['real.txt'])
    await expect(sandbox.files.read('passwd-link')).rejects.toThrow(/cannot be read|links are not followed/)
    await expect(sandbox.files.read('etc-link/passwd')).rejects.toThrow(/link/)
    await expect(sandbox.files.list('etc-link')).rejects.toThrow(/link/)
    await expect(sandbox.files.write('etc-link/evil', 'x')).rejects.toThrow(/link/)
  })

  it('refuses paths outside the workspace', async () => {
    await expect(sandbox.files.write('../../escape.txt', 'x')).rejects.toThrow(/outside the sandbox/)
    await expect(sandbox.files.read('/etc/passwd')).rejects.toThrow(/outside the sandbox/)
    await expect(sandbox.files.read('data/../../x')).rejects.toThrow(/outside the sandbox/)
  })
})

describe('local sandbox: commands', () => {
  let sandbox: Sandbox
  beforeAll(async () => {
    sandbox = await create({ limits: { processes: 32 } })
  })
  afterAll(async () => {
    await sandbox?.kill()
  })

  it('run in the same jail as the kernel: the same namespaces, user and workspace', async () => {
    const namespaces =
      "import os\n' '.join(os.readlink(f'/proc/self/ns/{n}') for n in ('pid', 'net', 'mnt', 'user'))"
    const fromCell = (await sandbox.runCode(namespaces)).text
    const fromCommand = await sandbox.commands.run(
      "echo \"'$(for n in pid net mnt user; do readlink /proc/self/ns/$n; done | tr '\\n' ' ' | sed 's/ $//')'\"; id -u",
    )
    expect(fromCommand.stdout).toBe(`${fromCell}\n1000\n`)
  })

  it('cannot reach the network', async () => {
    const result = await sandbox.commands
      .run('exec 3<>/dev/tcp/1.1.1.1/80 && echo connected')
      .catch((error: CommandExitError) => error)
    expect(result.stdout).not.toContain('connected')
    expect(result.exitCode).not.toBe(0)
  })

  it('share the process limit with the kernel', async () => {
    const script =
      "import subprocess\nprocs = []\ntry:\n    for i in range(100):\n        procs.append(subprocess.Popen(['sleep', '30']))\nexcept OSError:\n    print(len(procs))\nfor p in procs:\n    p.kill()"
    const result = await sandbox.commands.run(`python3 -c "${script}"`)
    expect(Number(result.stdout)).toBeGreaterThan(0)
    expect(Number(result.stdout)).toBeLessThan(32)
  })

  it('end with the sandbox', async () => {
    const other = await create()
    const sleeper = await other.commands.run('sleep 300', { background: true })
    await other.kill()
    const ended = await sleeper.wait().catch((error: CommandExitError) => error)
    expect(ended.exitCode).not.toBe(0)
  })
})

describe('local sandbox: teardown', () => {
  it('kill() ends every process, daemons and double forks included, and removes its folder', async () => {
    const sandbox = await create()
    const dir = sandboxDir(sandbox)
    const uid = await sandboxUid(sandbox)
    const execution = await sandbox.runCode(
      "import os, subprocess\nsubprocess.Popen(['setsid', 'sleep', '300'])\nsubprocess.Popen(['sh', '-c', 'nohup sleep 300 >/dev/null 2>&1 &'])\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        import time; time.sleep(300)\n    os._exit(0)\nprint('spawned')",
    )
    expect(execution.logs.stdout).toEqual(['spawned\n'])
    if (process.getuid?.() === 0) expect(liveUids().has(uid)).toBe(true)
    await sandbox.kill()
    if (process.getuid?.() === 0) expect(liveUids().has(uid)).toBe(false)
    expect(() => statSync(dir)).toThrow()
    await expect(sandbox.runCode('1')).rejects.toThrow(/killed/)
  })
})

describe('local sandbox: many at once and the warm pool', () => {
  it('runs 10 sandboxes in parallel, each with its own state', async () => {
    const sandboxes = await Promise.all(Array.from({ length: 10 }, () => create()))
    try {
      await Promise.all(sandboxes.map((sandbox, i) => sandbox.runCode(`mine = ${i}`)))
      const texts = await Promise.all(
        sandboxes.map(async (sandbox) => (await sandbox.runCode('mine * 2')).text),
      )
      expect(texts).toEqual(Array.from({ length: 10 }, (_, i) => String(i * 2)))
      expect(new Set(sandboxes.map((sandbox) => sandbox.sandboxId)).size).toBe(10)
    } finally {
      await Promise.all(sandboxes.map((sandbox) => sandbox.kill()))
    }
  }, 120_000)

  it('serves create() from the pool and refills it', async () => {
    const pooled = new LocalProvider({ poolSize: 1 })
    try {
      await pooled.warm()
      const sandbox = await Sandbox.create({ provider: pooled, envs: { FROM_POOL: '1' } })
      expect((await sandbox.runCode("import os\nos.environ['FROM_POOL']")).text).toBe("'1'")
      await sandbox.kill()
      await pooled.warm()
      const second = await Sandbox.create({ provider: pooled })
      expect((await second.runCode("import os\nos.environ.get('FROM_POOL')")).results).toEqual([])
      await second.kill()
    } finally {
      await pooled.close()
    }
  }, 60_000)
})

describe('local sandbox: set-up problems', () => {
  it('without isolation it warns at every creation, and still gives data/ and a clean environment', async () => {
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(warning.message)
    process.on('warning', onWarning)
    const dir = mkdtempSync(join(tmpdir(), 'analyst-none-'))
    writeFileSync(join(dir, 'in.csv'), 'a\n1\n')
    process.env.ANALYST_TEST_NONE_SECRET = 'visible?'
    try {
      const sandbox = await create({ isolation: 'none', data: [join(dir, 'in.csv')] })
      try {
        const execution = await sandbox.runCode(
          "import os, pandas as pd\nprint(len(pd.read_csv('data/in.csv')), 'ANALYST_TEST_NONE_SECRET' in os.environ)",
        )
        expect(execution.logs.stdout).toEqual(['1 False\n'])
      } finally {
        await sandbox.kill()
      }
      await new Promise((resolve) => setImmediate(resolve))
      expect(warnings.some((message) => message.includes("isolation: 'none'"))).toBe(true)
    } finally {
      process.off('warning', onWarning)
      delete process.env.ANALYST_TEST_NONE_SECRET
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('says how to install bubblewrap when it is missing', async () => {
    const { Kernel } = await import('../../src/sandbox/local/kernel.js')
    const error = await Kernel.start({
      command: '/nonexistent/bwrap',
      args: [],
      env: {},
      maxMessageBytes: 1024,
    }).catch((e: unknown) => e)
    expect((error as Error).name).toBe('SandboxUnavailableError')
    expect((error as { hint?: string }).hint).toMatch(/apt-get install bubblewrap/)
  })
})
