/**
 * Hostile code, families: reading host files, writing outside the workspace, and the host's
 * environment variables. The jail has a private file system (system folders read-only, the
 * workspace, the inputs read-only, nothing else of the host) and a clean environment.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider, Sandbox } from '../../src/index.js'
import { getRuntime } from '../../src/sandbox/local/runtime.js'
import {
  type Attempt,
  assertJailed,
  create,
  expectBlocked,
  hostileFamily,
  hostView,
  lit,
  probe,
  py,
  REPO,
  type Shell,
  SMALL,
  token,
} from './helpers.js'

const SECRET_NAME = 'ANALYST_TEST_SECRET'

/** sha256 of every file under a folder, to show that nothing in it changed. */
function digest(dir: string): Record<string, string> {
  const sums: Record<string, string> = {}
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue
    const path = join(entry.parentPath, entry.name)
    sums[path] = createHash('sha256').update(readFileSync(path)).digest('hex')
  }
  return sums
}

describe('hostile code: reading host files, writing outside the workspace, host environment (guard off)', () => {
  const family = hostileFamily()
  const secret = token('sk-live')
  let sandbox: Sandbox
  let inputDir: string
  let input: string
  beforeAll(async () => {
    // Set before the sandbox starts, as an API key in the host's environment would be.
    process.env[SECRET_NAME] = secret
    inputDir = mkdtempSync(join(tmpdir(), 'analyst-hostile-input-'))
    input = join(inputDir, 'input.csv')
    writeFileSync(input, 'a,b\n1,2\n', { mode: 0o644 })
    sandbox = await create({ limits: SMALL, data: [input] })
  })
  afterAll(async () => {
    delete process.env[SECRET_NAME]
    await sandbox?.kill()
    rmSync(inputDir, { recursive: true, force: true })
  })

  describe('reading host files', () => {
    it('blocked: /etc/shadow, /etc/sudoers and the host users in /etc/passwd', async () => {
      const report = await probe<{ shadow: Attempt; sudoers: Attempt; gshadow: Attempt; passwd: string }>(
        sandbox,
        py`
          report(shadow=attempt(lambda: open('/etc/shadow').read()),
                 sudoers=attempt(lambda: open('/etc/sudoers').read()),
                 gshadow=attempt(lambda: open('/etc/gshadow').read()),
                 passwd=open('/etc/passwd').read())
        `,
      )
      expectBlocked(report.shadow, /FileNotFoundError|PermissionError/)
      expectBlocked(report.sudoers, /FileNotFoundError|PermissionError/)
      expectBlocked(report.gshadow, /FileNotFoundError|PermissionError/)
      // The jail's own passwd: its user, root and nobody; none of the host's accounts.
      const users = report.passwd
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(':')[0])
      expect(users.sort()).toEqual(['nobody', 'root', 'user'])
    })

    it("blocked: the user's home and a marker file in it", async () => {
      const report = await probe<{ marker: Attempt; listing: Attempt; ssh: boolean }>(
        sandbox,
        py`
          report(marker=attempt(lambda: open(${lit(family.markers.home)}).read()),
                 listing=attempt(os.listdir, ${lit(homedir())}),
                 ssh=os.path.exists(${lit(join(homedir(), '.ssh'))}))
        `,
      )
      expectBlocked(report.marker, /FileNotFoundError/)
      expectBlocked(report.listing, /FileNotFoundError/)
      expect(report.ssh).toBe(false)
    })

    it('blocked: the project (its package.json, .git and a marker file) by absolute path', async () => {
      const report = await probe<{ pkg: Attempt; git: Attempt; marker: Attempt; walk: Shell }>(
        sandbox,
        py`
          report(pkg=attempt(lambda: open(${lit(join(REPO, 'package.json'))}).read()),
                 git=attempt(os.listdir, ${lit(join(REPO, '.git'))}),
                 marker=attempt(lambda: open(${lit(family.markers.repo)}).read()),
                 walk=sh("grep -rlI --exclude-dir=proc --exclude-dir=usr ${family.markers.secret} / 2>/dev/null | head -5;"
                         "find / \\( -path /proc -o -path /usr \\) -prune -o \\( -name '.analyst-hostile-*' -o -name '.hostile-marker-*' \\) -print 2>/dev/null | head -5"))
        `,
      )
      expectBlocked(report.pkg, /FileNotFoundError/)
      expectBlocked(report.git, /FileNotFoundError/)
      expectBlocked(report.marker, /FileNotFoundError/)
      // A search of everything the jail can see finds no host marker.
      expect(report.walk.out).toBe('')
    })

    it('blocked: the host /tmp; the jail has a private /tmp', async () => {
      const report = await probe<{ marker: Attempt; tmp: string[] }>(
        sandbox,
        py`
          report(marker=attempt(lambda: open(${lit(family.markers.tmp)}).read()), tmp=os.listdir('/tmp'))
        `,
      )
      expectBlocked(report.marker, /FileNotFoundError/)
      const host = readdirSync(tmpdir())
      expect(report.tmp.filter((name) => host.includes(name) && !name.startsWith('.'))).toEqual([])
    })

    it("blocked: another session's workspace and the runtime folder, by their host paths", async () => {
      const neighbor = family.neighbor.view
      const report = await probe<{ file: Attempt; work: Attempt; runtime: Attempt; uids: Attempt }>(
        sandbox,
        py`
          report(file=attempt(lambda: open(${lit(join(neighbor.work, 'neighbor.txt'))}).read()),
                 work=attempt(os.listdir, ${lit(neighbor.work)}),
                 runtime=attempt(os.listdir, ${lit(getRuntime().root)}),
                 uids=attempt(os.listdir, ${lit(join(getRuntime().root, 'uids'))}))
        `,
      )
      expectBlocked(report.file, /FileNotFoundError/)
      expectBlocked(report.work, /FileNotFoundError/)
      expectBlocked(report.runtime, /FileNotFoundError/)
      expectBlocked(report.uids, /FileNotFoundError/)
    })

    it('blocked: /proc shows only the jail; host processes (the test runner, the neighbor) are out of reach', async () => {
      const hostPids = [process.pid, process.ppid, ...family.neighbor.pids()]
      const report = await probe<{
        pids: number[]
        commands: string[]
        host: Record<string, Attempt>
        environs: string
      }>(
        sandbox,
        py`
          pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
          commands = []
          for p in pids:
              try:
                  commands.append(open('/proc/%d/cmdline' % p, 'rb').read().split(b'\\0')[0].decode())
              except OSError:
                  pass
          host = {str(p): attempt(lambda p=p: open('/proc/%d/environ' % p, 'rb').read()) for p in ${lit(hostPids)}}
          report(pids=pids, commands=commands, host=host, environs=sh('cat /proc/*/environ 2>/dev/null | tr "\\\\0" "\\\\n"')['out'])
        `,
      )
      // bwrap's init, the kernel, the shell and cat of this probe: nothing of the host.
      expect(report.pids.length).toBeLessThan(10)
      for (const command of report.commands) expect(command).toMatch(/bwrap|python3|sh|cat|tr/)
      for (const pid of hostPids) {
        if (report.pids.includes(pid)) continue // the same number names a jail process
        expectBlocked(report.host[String(pid)], /FileNotFoundError|ProcessLookupError/)
      }
      expect(report.environs).not.toContain(secret)
    })

    it('blocked: /proc/1/root and /proc/self/root lead only into the jail', async () => {
      const report = await probe<{ root: string[]; init: string[]; self: string[]; marker: Attempt }>(
        sandbox,
        py`
          report(root=sorted(os.listdir('/')), init=sorted(os.listdir('/proc/1/root')),
                 self=sorted(os.listdir('/proc/self/root')),
                 marker=attempt(lambda: open('/proc/1/root' + ${lit(family.markers.tmp)}).read()))
        `,
      )
      expect(report.init).toEqual(report.root)
      expect(report.self).toEqual(report.root)
      expect(report.root).not.toContain('root')
      expect(report.root).not.toContain('work')
      expectBlocked(report.marker, /FileNotFoundError/)
    })

    it('blocked: host folders beyond the system ones (/root, /var, /srv, /mnt, /boot, /sys, /work)', async () => {
      const report = await probe<{ present: string[] }>(
        sandbox,
        py`
          names = ['/root', '/var', '/srv', '/mnt', '/media', '/boot', '/sys', '/work', '/run', '/snap']
          report(present=[n for n in names if os.path.exists(n)])
        `,
      )
      expect(report.present).toEqual([])
    })
  })

  describe('writing outside the workspace', () => {
    it('blocked: the system folders, the kernel code and the passwd that all sandboxes share', async () => {
      const runtime = getRuntime()
      const before = { kernel: digest(join(runtime.own, 'kernel')), etc: digest(runtime.etc) }
      const report = await probe<Record<string, Attempt>>(
        sandbox,
        py`
          import glob
          # pandas's, which analyses import; the standard library's where it is not installed (a template's)
          imported = (glob.glob('/usr/lib/python3/dist-packages/pandas/__init__.py') + [os.__file__])[0]
          report(usr=attempt(lambda: open(imported, 'a').write('import os; os.system("id")')),
                 usrNew=attempt(lambda: open('/usr/bin/evil', 'w').write('x')),
                 kernel=attempt(lambda: open('/opt/analyst/analyst_kernel.py', 'a').write('\\nEVIL = 1\\n')),
                 kernelNew=attempt(lambda: open('/opt/analyst/sitecustomize.py', 'w').write('x')),
                 passwd=attempt(lambda: open('/etc/passwd', 'a').write('evil:x:0:0::/:/bin/sh\\n')),
                 ldcache=attempt(lambda: open('/etc/ld.so.cache', 'r+b').write(b'x')),
                 fonts=attempt(lambda: open('/tmp/.matplotlib/' + os.listdir('/tmp/.matplotlib')[0], 'a').write('x')))
        `,
      )
      for (const key of ['usr', 'usrNew', 'kernel', 'kernelNew', 'passwd', 'ldcache']) {
        expectBlocked(report[key], /OSError|PermissionError/)
        expect(report[key]?.message ?? '', key).toMatch(/Read-only file system|Permission denied/)
      }
      // The font cache is bound read-only too, when there is one.
      if (report.fonts?.error !== 'IndexError') expectBlocked(report.fonts, /OSError|PermissionError/)
      expect(digest(join(runtime.own, 'kernel'))).toEqual(before.kernel)
      expect(digest(runtime.etc)).toEqual(before.etc)
    })

    it('blocked: the input files in data/ cannot be written, truncated, chmodded, renamed or removed', async () => {
      const before = { content: readFileSync(input, 'utf8'), mode: statSync(input).mode }
      const report = await probe<Record<string, Attempt>>(
        sandbox,
        py`
          report(write=attempt(lambda: open('data/input.csv', 'a').write('evil')),
                 truncate=attempt(os.truncate, 'data/input.csv', 0),
                 chmod=attempt(os.chmod, 'data/input.csv', 0o777),
                 rename=attempt(os.rename, 'data/input.csv', 'stolen.csv'),
                 unlink=attempt(os.unlink, 'data/input.csv'),
                 create=attempt(lambda: open('data/new.csv', 'w').write('x')),
                 rmdir=attempt(os.rmdir, 'data'))
        `,
      )
      for (const [key, attempt] of Object.entries(report)) expect(attempt.ok, key).toBe(false)
      expect(readFileSync(input, 'utf8')).toBe(before.content)
      expect(statSync(input).mode).toBe(before.mode)
      expect(readdirSync(inputDir)).toEqual(['input.csv'])
    })

    it("harmless: writes to the jail's own root (/, /etc, /home) stay in the jail", async () => {
      const name = token('analyst-hostile-write')
      const report = await probe<Record<string, Attempt>>(
        sandbox,
        py`
          name = ${lit(name)}
          report(root=attempt(lambda: open('/' + name, 'w').write('x')),
                 etc=attempt(lambda: open('/etc/' + name, 'w').write('x')),
                 home=attempt(lambda: open('/home/' + name, 'w').write('x')))
        `,
      )
      // Whether these succeed (a scratch tmpfs of the jail) or fail, the host never sees them.
      expect(Object.keys(report)).toHaveLength(3)
      for (const dir of ['/', '/etc', '/home', tmpdir(), homedir()])
        expect(existsSync(join(dir, name)), dir).toBe(false)
    })

    it('harmless: /tmp is private: a file written there is not in the host /tmp nor in the neighbor /tmp', async () => {
      const name = token('analyst-hostile-tmp')
      const report = await probe<{ write: Attempt }>(
        sandbox,
        py`
          report(write=attempt(lambda: open('/tmp/' + ${lit(name)}, 'w').write('planted')))
        `,
      )
      expect(report.write.ok).toBe(true)
      expect(existsSync(join(tmpdir(), name))).toBe(false)
      const neighbor = await family.neighbor.sandbox.runCode(
        `import os\nos.path.exists('/tmp/' + ${lit(name)})`,
      )
      expect(neighbor.text).toBe('False')
    })

    it("blocked: writing into another session's workspace by its host path", async () => {
      const target = join(family.neighbor.view.work, 'pwned.txt')
      const report = await probe<{ write: Attempt; made: Attempt }>(
        sandbox,
        py`
          report(write=attempt(lambda: open(${lit(target)}, 'w').write('pwned')),
                 made=attempt(os.makedirs, ${lit(family.neighbor.view.work)}))
        `,
      )
      expectBlocked(report.write, /FileNotFoundError/)
      // makedirs may create the path inside the jail's scratch root; the host must not change.
      expect(existsSync(target)).toBe(false)
      expect(report.made).toBeDefined()
    })

    it('blocked: hard links to files outside the workspace (nothing outside is on its file system)', async () => {
      const report = await probe<Record<string, Attempt>>(
        sandbox,
        py`
          report(passwd=attempt(os.link, '/etc/passwd', 'passwd'),
                 python=attempt(os.link, '/usr/bin/python3', 'python3'),
                 kernel=attempt(os.link, '/opt/analyst/analyst_kernel.py', 'kernel.py'),
                 data=attempt(os.link, 'data/input.csv', 'input-link.csv'))
        `,
      )
      for (const attempt of Object.values(report)) expectBlocked(attempt, /OSError|PermissionError/)
      expect(readdirSync(hostView(sandbox).work).sort()).toEqual(['data'])
    })
  })

  describe('host environment variables', () => {
    it('blocked: an API key in the host environment is not in os.environ nor in any process environment', async () => {
      expect(process.env[SECRET_NAME]).toBe(secret)
      const report = await probe<{ environ: string; self: string; init: string; child: Shell }>(
        sandbox,
        py`
          report(environ=repr(dict(os.environ)),
                 self=open('/proc/self/environ', 'rb').read().decode(errors='replace'),
                 init=open('/proc/1/environ', 'rb').read().decode(errors='replace'),
                 child=sh('env; cat /proc/$$/environ'))
        `,
      )
      for (const text of [report.environ, report.self, report.init, report.child.out]) {
        expect(text).not.toContain(secret)
        expect(text).not.toContain(SECRET_NAME)
      }
    })

    it('blocked: nor in a kernel started ahead in the warm pool', async () => {
      const pooled = new LocalProvider({ poolSize: 1 })
      try {
        await pooled.warm()
        const fromPool = await Sandbox.create({ provider: pooled })
        try {
          await assertJailed(fromPool)
          const report = await probe<{ environ: string; init: string }>(
            fromPool,
            py`
              report(environ=repr(dict(os.environ)), init=open('/proc/1/environ', 'rb').read().decode(errors='replace'))
            `,
          )
          expect(report.environ).not.toContain(secret)
          expect(report.init).not.toContain(secret)
        } finally {
          await fromPool.kill()
        }
      } finally {
        await pooled.close()
      }
    })

    it("blocked: one sandbox's envs (at creation and per cell) do not reach the neighbor, nor outlive the cell", async () => {
      const given = token('given')
      const perCell = token('per-cell')
      const own = await create({ limits: SMALL, envs: { GIVEN_KEY: given } })
      try {
        const inside = await probe<{ given: string | null; cell: string | null }>(
          own,
          py`
            report(given=os.environ.get('GIVEN_KEY'), cell=os.environ.get('CELL_KEY'))
          `,
          { envs: { CELL_KEY: perCell } },
        )
        expect(inside).toEqual({ given, cell: perCell })
        const after = await probe<{ cell: string | null }>(own, "report(cell=os.environ.get('CELL_KEY'))")
        expect(after.cell).toBeNull()
        const neighbor = await family.neighbor.sandbox.runCode(
          "import os\nrepr(dict(os.environ)) + open('/proc/1/environ').read()",
        )
        expect(neighbor.text).not.toContain(given)
        expect(neighbor.text).not.toContain(perCell)
      } finally {
        await own.kill()
      }
    })
  })
})
