/**
 * Hostile code, family: symlink and path tricks through the files API and through artifact
 * collection. The host reads and writes the workspace while code in it may plant links, swap
 * folders and make special files: it must never be led outside the workspace, and never hang.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AnalystError, InvalidArgumentError, type Sandbox } from '../../src/index.js'
import {
  create,
  type HostView,
  hostileFamily,
  hostView,
  lit,
  probe,
  py,
  REPO,
  run,
  SMALL,
} from './helpers.js'

/** The call was refused with one of the sandbox's own errors, not carried out. */
async function expectRefused(call: Promise<unknown>) {
  const error = await call.then(
    () => undefined,
    (error: unknown) => error,
  )
  expect(error, 'expected the call to be refused').toBeDefined()
  expect(AnalystError.isInstance(error), String(error)).toBe(true)
}

describe('hostile code: symlink and path tricks (guard off)', () => {
  const family = hostileFamily()
  let sandbox: Sandbox
  let view: HostView
  /** A host folder that links planted in the workspace point at. */
  let outside: string
  let outsideFile: string
  beforeAll(async () => {
    sandbox = await create({ limits: SMALL })
    view = hostView(sandbox)
    outside = mkdtempSync(join(tmpdir(), 'analyst-hostile-outside-'))
    outsideFile = join(outside, 'secret.txt')
    writeFileSync(outsideFile, 'host secret', { mode: 0o644 })
  })
  afterAll(async () => {
    await sandbox?.kill()
    rmSync(outside, { recursive: true, force: true })
  })

  describe('through the files API', () => {
    it("blocked: files.write('../../x') and other relative escapes; nothing lands on the host", async () => {
      for (const path of [
        '../../x',
        '../x',
        'a/../../x',
        './../../../x',
        'data/../../x',
        'data/../../../x',
      ]) {
        await expect(sandbox.files.write(path, 'escaped'), path).rejects.toThrow(InvalidArgumentError)
      }
      for (const dir of [
        dirname(view.work),
        dirname(dirname(view.work)),
        dirname(dirname(dirname(view.work))),
      ]) {
        expect(existsSync(join(dir, 'x')), dir).toBe(false)
      }
    })

    it('blocked: absolute paths outside /home/user, for write, read, list, stat and remove', async () => {
      const paths = [
        '/etc/passwd',
        '/root/.bashrc',
        '/tmp/../etc/passwd',
        '/home/user/../../etc/passwd',
        '/home/userx/file',
        '/home',
        '/',
      ]
      for (const path of paths) {
        await expect(sandbox.files.write(path, 'x'), `write ${path}`).rejects.toThrow(InvalidArgumentError)
        await expect(sandbox.files.read(path), `read ${path}`).rejects.toThrow(InvalidArgumentError)
        await expect(sandbox.files.list(path), `list ${path}`).rejects.toThrow(InvalidArgumentError)
        await expect(sandbox.files.remove(path), `remove ${path}`).rejects.toThrow(InvalidArgumentError)
        await expect(sandbox.files.stat(path), `stat ${path}`).rejects.toThrow(InvalidArgumentError)
      }
      expect(readFileSync(outsideFile, 'utf8')).toBe('host secret')
    })

    it("blocked: /tmp of the files API is the jail's own, never the host's", async () => {
      // outsideFile is under the host's /tmp: the jail's /tmp has no such file.
      expect(outsideFile.startsWith('/tmp/')).toBe(true)
      await expectRefused(sandbox.files.read(outsideFile))
      await expectRefused(sandbox.files.list(outside))
      // A forked jail takes the write in its own /tmp, a spawned one refuses it: the host's file stays.
      await sandbox.files.write(outsideFile, 'overwritten').catch(() => undefined)
      await sandbox.files.remove(outsideFile).catch(() => undefined)
      expect(readFileSync(outsideFile, 'utf8')).toBe('host secret')
    })

    it('blocked: a NUL byte in a path', async () => {
      await expectRefused(sandbox.files.write('ok.txt\0/../../../x', 'x'))
      await expectRefused(sandbox.files.read('x\0y'))
      expect(existsSync(join(view.work, 'ok.txt'))).toBe(false)
    })

    it('blocked: a context whose working directory is outside the workspace', async () => {
      for (const cwd of ['/etc', '/tmp', '../..', '/home/user/../../root']) {
        await expect(sandbox.createContext({ cwd }), cwd).rejects.toThrow(InvalidArgumentError)
      }
    })

    it('blocked: data names that would escape data/ (addData)', async () => {
      for (const name of ['../escape.csv', '..', '.', 'a/b.csv', '', 'x\0y']) {
        await expectRefused(sandbox.files.addData(outsideFile, name))
      }
      expect(readdirSync(dirname(view.work)).some((name) => name.includes('escape'))).toBe(false)
    })
  })

  describe('links planted by code, then read by the host', () => {
    it("blocked: links to /etc/shadow, to host files and to another session's workspace are not followed by read, stat or list", async () => {
      const made = await probe<{ links: string[] }>(
        sandbox,
        py`
          os.symlink('/etc/shadow', 'shadow.txt')
          os.symlink(${lit(outsideFile)}, 'secret.txt')
          os.symlink(${lit(join(REPO, 'package.json'))}, 'package.json')
          os.symlink('../../../../../../../../' + ${lit(outsideFile)}, 'relative.txt')
          os.symlink(${lit(join(family.neighbor.view.work, 'neighbor.txt'))}, 'neighbor.txt')
          report(links=sorted(os.listdir('.')))
        `,
      )
      expect(made.links).toEqual([
        'data',
        'neighbor.txt',
        'package.json',
        'relative.txt',
        'secret.txt',
        'shadow.txt',
      ])
      for (const name of ['shadow.txt', 'secret.txt', 'package.json', 'relative.txt', 'neighbor.txt']) {
        await expectRefused(sandbox.files.read(name))
        expect(await sandbox.files.stat(name), name).toBeUndefined()
        expect(await sandbox.files.exists(name), name).toBe(false)
      }
      const listed = (await sandbox.files.list('.')).map((entry) => entry.name)
      expect(listed).toEqual(['data'])
    })

    it('blocked: artifact collection skips links to host files and folders', async () => {
      const ran = await run(
        sandbox,
        py`
          import os
          os.symlink(${lit(outsideFile)}, 'report.csv')
          os.symlink(${lit(outside)}, 'results')
          os.symlink('/', 'hostroot')
          open('real.csv', 'w').write('a,b\\n1,2\\n')
        `,
      )
      expect(ran.execution.error).toBeUndefined()
      const names = ran.execution.artifacts.map((artifact) => artifact.name)
      expect(names).toEqual(['real.csv'])
      expect(readdirSync(outside)).toEqual(['secret.txt'])
    })

    it('blocked: a linked folder is not entered by read, write, list or remove', async () => {
      await run(
        sandbox,
        py`
          import os
          os.symlink(${lit(outside)}, 'linked')
          os.symlink('/etc', 'etc')
        `,
      )
      await expectRefused(sandbox.files.read('linked/secret.txt'))
      await expectRefused(sandbox.files.read('etc/passwd'))
      await expectRefused(sandbox.files.write('linked/planted.txt', 'x'))
      await expectRefused(sandbox.files.list('linked'))
      await expectRefused(sandbox.files.remove('linked/secret.txt'))
      expect(readdirSync(outside)).toEqual(['secret.txt'])
      expect(readFileSync(outsideFile, 'utf8')).toBe('host secret')
    })

    it('harmless: removing a link removes the link, never its target', async () => {
      await sandbox.files.remove('linked')
      await sandbox.files.remove('secret.txt')
      expect(readdirSync(outside)).toEqual(['secret.txt'])
      expect(readFileSync(outsideFile, 'utf8')).toBe('host secret')
      const left = await probe<{ names: string[] }>(sandbox, "report(names=sorted(os.listdir('.')))")
      expect(left.names).not.toContain('linked')
      expect(left.names).not.toContain('secret.txt')
    })

    it('blocked: writing over a name that code turned into a link does not write through it', async () => {
      await run(sandbox, `import os\nos.symlink(${lit(outsideFile)}, 'overwrite.txt')`)
      await expectRefused(sandbox.files.write('overwrite.txt', 'written through the link'))
      expect(readFileSync(outsideFile, 'utf8')).toBe('host secret')
    })

    it('blocked: a folder replaced by a link between two host writes', async () => {
      await sandbox.files.write('out/first.txt', 'one')
      await run(
        sandbox,
        py`
          import os, shutil
          shutil.rmtree('out')
          os.symlink(${lit(outside)}, 'out')
        `,
      )
      await expectRefused(sandbox.files.write('out/second.txt', 'two'))
      await expectRefused(sandbox.files.read('out/secret.txt'))
      expect(readdirSync(outside)).toEqual(['secret.txt'])
    })

    it('blocked: a folder swapped with a link in a loop while the host writes, reads, lists and collects', async () => {
      // A race for the host's checks: a thread in the kernel atomically exchanges swap/ (a real
      // folder) and swap.alt (a link to the host folder) with renameat2(RENAME_EXCHANGE), as fast
      // as it can, while the host works in swap/.
      await run(
        sandbox,
        py`
          import ctypes, os, threading
          libc = ctypes.CDLL(None, use_errno=True)
          os.makedirs('swap', exist_ok=True)
          open('swap/inside.txt', 'w').write('inside')
          os.symlink(${lit(outside)}, 'swap.alt')
          swaps = [0]
          def swapper():
              while not stop.is_set():
                  # renameat2(AT_FDCWD, 'swap', AT_FDCWD, 'swap.alt', RENAME_EXCHANGE)
                  if libc.syscall(316, -100, b'swap', -100, b'swap.alt', 2) == 0:
                      swaps[0] += 1
          stop = threading.Event()
          swapping = threading.Thread(target=swapper, daemon=True)
          swapping.start()
        `,
      )
      const read: string[] = []
      let refused = 0
      let swaps = 0
      try {
        // At least 150 rounds, and on until some host call met the link (a busy machine may run
        // the swapper rarely), within a deadline that only a host that never refuses reaches.
        const deadline = Date.now() + 30_000
        for (let i = 0; i < 150 || (refused === 0 && Date.now() < deadline); i++) {
          await sandbox.files.write(`swap/host-${i % 3}.txt`, 'from host').catch(() => refused++)
          const text = await sandbox.files.read('swap/secret.txt').catch(() => undefined)
          if (text !== undefined) read.push(text)
          await sandbox.files.read('swap/inside.txt').catch(() => undefined)
          await sandbox.files.list('swap').catch(() => undefined)
          await sandbox.files.remove('swap/secret.txt').catch(() => undefined)
          // Artifact collection walks the workspace after each cell.
          if (i % 30 === 0) await sandbox.runCode('1')
        }
      } finally {
        const stopped = await run(
          sandbox,
          "stop.set()\nswapping.join()\nimport os\nif os.path.islink('swap'):\n    libc.syscall(316, -100, b'swap', -100, b'swap.alt', 2)\nswaps[0]",
        )
        swaps = Number(stopped.execution.text)
      }
      // The race did happen: the folder was swapped, and some host calls met the link and refused.
      expect(swaps).toBeGreaterThan(100)
      expect(refused).toBeGreaterThan(0)
      expect(read).toEqual([])
      expect(readdirSync(outside)).toEqual(['secret.txt'])
      expect(readFileSync(outsideFile, 'utf8')).toBe('host secret')
    })
  })

  describe('special files planted by code', () => {
    it('bounded: a FIFO does not hang files.read, files.write or artifact collection', async () => {
      const ran = await run(sandbox, "import os\nos.mkfifo('pipe.csv')\nos.mkfifo('pipe2.csv')")
      expect(ran.execution.error).toBeUndefined()
      expect(ran.execution.artifacts.map((artifact) => artifact.name)).not.toContain('pipe.csv')
      await expectRefused(sandbox.files.read('pipe.csv'))
      await expectRefused(sandbox.files.write('pipe2.csv', 'x'))
      expect(await sandbox.files.stat('pipe.csv')).toBeUndefined()
    })

    it('blocked: device nodes cannot be made in the workspace (and so cannot be read by the host)', async () => {
      const report = await probe<{ mem: { ok: boolean }; disk: { ok: boolean } }>(
        sandbox,
        py`
          import stat
          report(mem=attempt(os.mknod, 'mem', 0o666 | stat.S_IFCHR, os.makedev(1, 1)),
                 disk=attempt(os.mknod, 'disk', 0o666 | stat.S_IFBLK, os.makedev(254, 0)))
        `,
      )
      expect(report.mem.ok).toBe(false)
      expect(report.disk.ok).toBe(false)
      await expectRefused(sandbox.files.read('mem'))
    })

    it('harmless: a file name that is not UTF-8 does not break files.list', async () => {
      // FAILS: files.list('.') rejects with a bare ENOENT Error (not an AnalystError): the host reads
      // names as UTF-8 (the bad bytes become U+FFFD) and then lstat()s the changed name. The host
      // cannot remove the file either, and artifact collection silently skips it.
      const odd = await create({ limits: SMALL })
      try {
        await run(odd, "open(b'bad\\xff\\xfe.csv', 'w').write('x')\nopen('good.csv', 'w').write('y')")
        const listed = await odd.files.list('.').catch((error: unknown) => error)
        expect(listed, String(listed)).toBeInstanceOf(Array)
        expect((listed as Array<{ name: string }>).map((entry) => entry.name)).toContain('good.csv')
      } finally {
        await odd.kill()
      }
    })

    it('bounded: a workspace nested thousands of folders deep does not break the next cell', async () => {
      // FAILS until the scan is iterative: the host's artifact scan recurses once per folder level and
      // holds one open descriptor per level; at depth 30000 it overflows the stack and runCode
      // rejects with RangeError on every later cell.
      const deep = await create({ limits: SMALL })
      try {
        const made = await run(
          deep,
          py`
            import os
            base = os.getcwd()
            os.mkdir('deep'); os.chdir('deep')
            for i in range(30000):
                os.mkdir('d'); os.chdir('d')
            open('leaf.txt', 'w').write('x')
            os.chdir(base)
            print('made')
          `,
        ).catch((error: unknown) => error)
        const next = await run(deep, '1 + 1').catch((error: unknown) => error)
        expect(made, String(made)).toHaveProperty('stdout', 'made\n')
        expect(next, String(next)).toHaveProperty('execution.text', '2')
      } finally {
        await deep.kill()
      }
    })
  })
})
