/**
 * Sandboxes rooted in a template (Debian trixie: Python 3.13, pandas 2) on the local engine,
 * through `Sandbox.create({ template })`: the template's Python and packages, its own /etc, its
 * env; the workspace, data/, charts and commands as on the host; a pool per template; unknown names
 * refused with the names there are. The hostile cases run in the template too (test/security/).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider, Sandbox } from '../../src/index.js'
import { getRuntime } from '../../src/sandbox/local/runtime.js'
import { buildTemplate } from '../../src/templates/build.js'
import { parseSpec } from '../../src/templates/spec.js'
import type { BuiltTemplate } from '../../src/templates/types.js'
import { canMakeTemplates, TEMPLATE_HOME, TRIXIE, trixieTemplate } from '../support/templates.js'
import { waitFor } from '../support/wait.js'
import { buildWheel, type PackageIndex, servePackageIndex } from '../templates/index-server.js'

const provider = new LocalProvider({ poolSize: 0, home: TEMPLATE_HOME })

describe.runIf(canMakeTemplates)('sandboxes in a trixie template', () => {
  let sandbox: Sandbox
  beforeAll(async () => {
    await trixieTemplate()
    sandbox = await Sandbox.create({ provider, template: TRIXIE })
  }, 900_000)
  afterAll(async () => {
    await sandbox?.kill()
    await provider.close()
  })

  it("run the template's Python and pandas 2 (DataFrame.map), not the host's", async () => {
    const execution = await sandbox.runCode(
      "import sys, pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})\nprint(sys.version.split()[0], pd.__version__)\ndf.map(lambda v: v * 10)['a'].tolist()",
    )
    expect(execution.error).toBeUndefined()
    const [python, pandas] = execution.logs.stdout.join('').trim().split(' ')
    expect(python).toMatch(/^3\.13\./)
    expect(pandas).toMatch(/^2\./)
    expect(execution.text).toBe('[10, 20]')
  })

  it('tell the model what the template has, and %pip says what is installed in it', async () => {
    expect(sandbox.environment).toMatchObject({ template: TRIXIE, languages: ['python', 'bash'] })
    expect(sandbox.environment?.python).toMatch(/^3\.13\./)
    expect(sandbox.environment?.packages.pandas).toMatch(/^2\./)
    const pip = await sandbox.runCode('%pip install polars pandas')
    expect(pip.logs.stderr.join('')).toContain('polars: not installed in the template test-trixie')
    expect(pip.logs.stderr.join('')).toMatch(/pandas: installed already \(2\./)
  })

  it("see the template's own /etc and env, not the host's, with the workspace, data/ and charts", async () => {
    const data = mkdtempSync(join(tmpdir(), 'tpl-data-'))
    writeFileSync(join(data, 'sales.csv'), 'region,amount\nnorth,3\nsouth,4\n')
    const withData = await Sandbox.create({ provider, template: TRIXIE, data: [join(data, 'sales.csv')] })
    try {
      const execution = await withData.runCode(
        [
          'import os, pandas as pd, matplotlib.pyplot as plt',
          "print(os.environ.get('ANALYST_TEMPLATE_TEST'), os.getcwd())",
          "df = pd.read_csv('data/sales.csv')",
          "df.plot.bar(x='region', y='amount'); plt.show()",
          "df.to_csv('out.csv'); int(df.amount.sum())",
        ].join('\n'),
      )
      expect(execution.error).toBeUndefined()
      expect(execution.logs.stdout.join('')).toBe('trixie /home/user\n')
      expect(execution.results.some((result) => result.png)).toBe(true)
      expect(execution.text).toBe('7')
      // The template's allowed /etc (trixie's python3.13 folder), none of the host's (bookworm's python3.11).
      const shell = await withData.commands.run('ls /etc; python3 --version')
      expect(shell.stdout.split('\n')).toContain('python3.13')
      expect(shell.stdout.split('\n')).not.toContain('python3.11')
      expect(shell.stdout).not.toContain('shadow')
      expect(shell.stdout).toContain('Python 3.13')
      expect(await withData.files.read('/home/user/out.csv')).toContain('north')
    } finally {
      await withData.kill()
    }
  })

  it('keep a pool per template: a warm template create takes a ready kernel', async () => {
    const pooled = new LocalProvider({ poolSize: 1, home: TEMPLATE_HOME })
    try {
      await pooled.warm({ template: TRIXIE })
      expect(pooled.poolStats.ready).toBe(1)
      const one = await Sandbox.create({ provider: pooled, template: TRIXIE })
      expect(pooled.poolStats.hits).toBe(1)
      expect((await one.runCode('import pandas; pandas.__version__')).text).toMatch(/^'2\./)
      await one.kill()
    } finally {
      await pooled.close()
    }
  })

  it('run through `analyst run --template`, and an unknown name is said with those there are', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tpl-run-'))
    writeFileSync(
      join(dir, 'cell.py'),
      "import pandas as pd\nprint(pd.__version__)\npd.DataFrame({'a': [1]}).map(str).a[0]\n",
    )
    const analyst = (...args: string[]) =>
      spawnSync(process.execPath, [resolve('dist/cli/bin.js'), 'run', 'cell.py', ...args], {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, ANALYST_HOME: TEMPLATE_HOME, ANALYST_POOL_SIZE: '0', NO_COLOR: '1' },
        timeout: 120_000,
      })
    const ran = analyst('--template', TRIXIE)
    expect(ran.stderr).toBe('')
    expect(ran.stdout).toMatch(/^2\.\d+\.\d+\n/)
    expect(ran.stdout).toContain("Out: '1'")
    const unknown = analyst('--template', 'nope')
    expect(unknown.status).not.toBe(0)
    expect(unknown.stderr).toContain('No template "nope"')
    expect(unknown.stderr).toContain(TRIXIE)
    expect(unknown.stderr).not.toMatch(/\n\s+at /) // no stack trace
  })

  it('refuse a template that is not there, naming those that are', async () => {
    await expect(Sandbox.create({ provider, template: 'no-such-template' })).rejects.toMatchObject({
      message: expect.stringContaining('No template "no-such-template"'),
      hint: expect.stringContaining(TRIXIE),
    })
  })
})

/** The program of the jail's PID 1: the zygote's init when forked, bubblewrap when spawned. */
async function jailInit(sandbox: Sandbox): Promise<string | undefined> {
  const cmdline = await sandbox.runCode("open('/proc/1/cmdline', 'rb').read().split(b'\\0')[:3]")
  return /analyst_zygote\.py/.test(cmdline.text ?? '')
    ? 'zygote'
    : /^\[b'bwrap'/.test(cmdline.text ?? '')
      ? 'bwrap'
      : cmdline.text
}

const ZYGOTE_INIT = 'zygote'

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
  } catch {
    return ''
  }
}

/** The processes whose parent is pid. */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((child) => {
      try {
        return readFileSync(`/proc/${child}/stat`, 'utf8').split(') ')[1]?.split(' ')[1] === String(pid)
      } catch {
        return false
      }
    })
}

/** Two sandboxes of one template, created together. */
function twoOf(template: string | BuiltTemplate, from = provider): Promise<[Sandbox, Sandbox]> {
  return Promise.all([
    Sandbox.create({ provider: from, template }),
    Sandbox.create({ provider: from, template }),
  ])
}

describe.runIf(canMakeTemplates)("sandboxes forked from a trixie template's own zygote (as root)", () => {
  let started: BuiltTemplate
  beforeAll(async () => {
    // The test template with a start step: a token drawn once, in the zygote, before any fork.
    const trixie = await trixieTemplate()
    started = {
      ...trixie,
      id: `${trixie.id.slice(0, 48)}5741727465640001`,
      names: ['test-trixie-started'],
      start: 'import os, pandas\ntoken = os.urandom(8).hex()\ndef drawn():\n    return token\n',
      // Its sandboxes' memory unless the caller sets theirs (a spec's `memory:`).
      resources: { memoryBytes: 1500 * 1024 ** 2 },
    }
  }, 900_000)

  it('run 3.13 and pandas 2 with no capability, each in its own workspace, blind to the other', async () => {
    const [a, b] = await twoOf(TRIXIE)
    try {
      expect(await jailInit(a)).toBe(ZYGOTE_INIT)
      const look = (mark: string) =>
        [
          'import json, os, sys, pandas',
          "status = dict(line.split(':\\t', 1) for line in open('/proc/self/status').read().splitlines() if ':\\t' in line)",
          `open('/home/user/mine-${mark}', 'w').write('${mark}')`,
          "print(json.dumps({'python': sys.version.split()[0], 'pandas': pandas.__version__, 'uid': os.getuid(),",
          "  'caps': {k: status[k].strip() for k in ('CapEff', 'CapPrm', 'CapBnd', 'NoNewPrivs', 'Seccomp')},",
          "  'home': sorted(os.listdir('/home/user')), 'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),",
          "  'zygote': os.path.exists('/tmp/.zygote'), 'host': [p for p in ('/work', '/root', '/run', '/srv/analyst') if os.path.exists(p)]}))",
        ].join('\n')
      const seenA = JSON.parse((await a.runCode(look('a'))).logs.stdout.join(''))
      const seenB = JSON.parse((await b.runCode(look('b'))).logs.stdout.join(''))
      expect(seenA.home).toEqual(['data', 'mine-a'])
      expect(seenA.python).toMatch(/^3\.13\./)
      expect(seenA.pandas).toMatch(/^2\./)
      expect(seenA.uid).toBe(1000)
      expect(seenA.caps).toEqual({
        CapEff: '0000000000000000',
        CapPrm: '0000000000000000',
        CapBnd: '0000000000000000',
        NoNewPrivs: '1',
        Seccomp: '2',
      })
      expect(seenB.home).toEqual(['data', 'mine-b'])
      // The init, the kernel and the probe's own: nothing of the other sandbox or of the zygote.
      expect(seenB.pids.slice(0, 2)).toEqual([1, 2])
      expect(seenB.pids.every((pid: number) => pid < 100)).toBe(true)
      expect(seenB.zygote).toBe(false)
      expect(seenB.host).toEqual([])
    } finally {
      await Promise.all([a.kill(), b.kill()])
    }
  })

  it("inherit the start step's state, run once in the zygote, and a kernel restart starts from it again", async () => {
    const [a, b] = await twoOf(started)
    try {
      expect(await jailInit(a)).toBe(ZYGOTE_INIT)
      const tokenA = (await a.runCode("mine = 'a'\ndrawn()")).text
      expect(tokenA).toMatch(/^'[0-9a-f]{16}'$/)
      expect((await b.runCode('token')).text).toBe(tokenA)
      await a.files.write('kept.txt', 'kept')
      const died = await a.runCode('import os\nos._exit(3)')
      expect(died.error?.name).toBe('KernelDied')
      // A new kernel, forked again: the start step's state, the workspace, and the cells replayed.
      const after = await a.runCode("(token, mine, open('kept.txt').read())")
      expect(after.text).toBe(`(${tokenA}, 'a', 'kept')`)
      expect(await jailInit(a)).toBe(ZYGOTE_INIT)
    } finally {
      await Promise.all([a.kill(), b.kill()])
    }
  })

  it('end with their host: a host killed with SIGKILL leaves no template zygote behind', async () => {
    // The built package, as `analyst` runs it (the test above runs dist/cli too).
    const script = `import { LocalProvider, Sandbox } from ${JSON.stringify(resolve('dist/index.js'))}
      const provider = new LocalProvider({ poolSize: 0, home: ${JSON.stringify(TEMPLATE_HOME)} })
      const sandbox = await Sandbox.create({ provider, template: ${JSON.stringify(TRIXIE)} })
      console.log((await sandbox.runCode('1 + 1')).text)
      setInterval(() => {}, 1000)`
    const host = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    try {
      let out = ''
      host.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString()
      })
      await waitFor(() => out.includes('2'), {
        what: 'the host to run a cell in a template sandbox',
        timeoutMs: 120_000,
      })
      const zygote = childrenOf(host.pid as number).filter((pid) => /analyst_userns\.py/.test(cmdline(pid)))
      expect(zygote).toHaveLength(1)
      host.kill('SIGKILL')
      await waitFor(() => !existsSync(`/proc/${zygote[0]}`), {
        what: 'the template zygote to end with its host',
      })
    } finally {
      host.kill('SIGKILL')
    }
  })

  it('start with 300 MB forked and spawned; a limit too small for the imports says so, and what to raise', async () => {
    const spawning = new LocalProvider({ poolSize: 0, home: TEMPLATE_HOME, coldStart: 'spawn' })
    const MiB = 1024 ** 2
    try {
      for (const from of [provider, spawning]) {
        const small = await Sandbox.create({
          provider: from,
          template: TRIXIE,
          limits: { memoryBytes: 300 * MiB },
        })
        try {
          expect((await small.runCode('import pandas; pandas.__version__')).text).toMatch(/^'2\./)
        } finally {
          await small.kill()
        }
        await expect(
          Sandbox.create({ provider: from, template: TRIXIE, limits: { memoryBytes: 64 * MiB } }),
        ).rejects.toMatchObject({
          message: expect.stringContaining('(memory limit 64 MiB)'),
          hint: expect.stringContaining('Give the sandbox 512 MiB or more'),
          fix: { setting: 'memory' },
        })
      }
    } finally {
      await spawning.close()
    }
  })

  it("spawn when told to (ANALYST_COLD_START=spawn's provider option), and run the start step in each kernel", async () => {
    const spawning = new LocalProvider({ poolSize: 0, home: TEMPLATE_HOME, coldStart: 'spawn' })
    try {
      const [a, b] = await twoOf(started, spawning)
      expect(await jailInit(a)).toBe('bwrap')
      expect((await a.runCode('token')).text).not.toBe((await b.runCode('token')).text)
      // The template's memory, forked and spawned, as the engine is handed it (Sandbox.create, `run --template`).
      const limit = 'import resource\nresource.getrlimit(resource.RLIMIT_AS)[0] >> 20'
      expect((await a.runCode(limit)).text).toBe('1500')
      const forked = await Sandbox.create({ provider, template: started })
      expect((await forked.runCode(limit)).text).toBe('1500')
      await forked.kill()
      await Promise.all([a.kill(), b.kill()])
    } finally {
      await spawning.close()
    }
  })
})

describe.runIf(canMakeTemplates)(
  "sandboxes in a template under a folder closed to other users (root's /root/.analyst)",
  () => {
    let closed: string
    let dir: string
    let template: BuiltTemplate
    const spawning = new LocalProvider({ poolSize: 0, home: TEMPLATE_HOME, coldStart: 'spawn' })
    beforeAll(async () => {
      const trixie = await trixieTemplate()
      closed = mkdtempSync(join(tmpdir(), 'tpl-closed-')) // 0700, as /root is
      writeFileSync(join(closed, 'analyst-closed-marker'), 'not for sandboxes')
      dir = join(closed, 'templates', trixie.id)
      mkdirSync(dir, { recursive: true })
      // The cached template, bound there: a copy of its 770 MB would take minutes.
      execFileSync('mount', ['--bind', trixie.dir, dir])
      template = {
        ...trixie,
        id: `${trixie.id.slice(0, 48)}436c6f7365640001`,
        names: ['test-trixie-closed'],
        dir,
        rootfs: join(dir, 'rootfs'),
      }
    }, 900_000)
    afterAll(async () => {
      await spawning.close()
      if (!dir) return
      execFileSync('umount', [dir])
      // Never a recursive delete: a bind still there would reach into the cache.
      rmdirSync(dir)
      rmdirSync(join(closed, 'templates'))
      rmSync(join(closed, 'analyst-closed-marker'))
      rmdirSync(closed)
    })

    it('fork and spawn, run pandas 2, and see nothing of the closed folder beyond the template', async () => {
      expect(statSync(closed).mode & 0o777).toBe(0o700)
      const look = [
        'import json, pandas, subprocess',
        "found = subprocess.run(['find', '/', '-path', '/proc', '-prune', '-o', '-name', 'analyst-closed-marker', '-print'], capture_output=True, text=True).stdout",
        "print(json.dumps({'pandas': pandas.__version__, 'found': found}))",
      ].join('\n')
      for (const [from, init] of [
        [provider, ZYGOTE_INIT],
        [spawning, 'bwrap'],
      ] as const) {
        const sandbox = await Sandbox.create({ provider: from, template })
        try {
          expect(await jailInit(sandbox)).toBe(init)
          const execution = await sandbox.runCode(look)
          expect(execution.error).toBeUndefined()
          const seen = JSON.parse(execution.logs.stdout.join(''))
          expect(seen.pandas).toMatch(/^2\./)
          expect(seen.found).toBe('')
        } finally {
          await sandbox.kill()
        }
      }
      // Bound in the jails' own mount namespaces only: the host sees an empty folder.
      expect(readdirSync(join(getRuntime().own, 'reach', template.id.slice(0, 16)))).toEqual([])
    })
  },
)

describe.runIf(process.geteuid?.() === 0)(
  'sandboxes in a template over the host’s Python (a pip layer)',
  () => {
    let home: string
    let index: PackageIndex
    let venvProvider: LocalProvider
    beforeAll(async () => {
      // 0700, as root's home: sandboxes reach the venv through a bind (template-reach.ts).
      home = mkdtempSync(join(tmpdir(), 'tpl-host-'))
      index = await servePackageIndex(buildWheel(home, 'tinypkg', '0.1.0'))
      const spec = `base: host\npip:\n  packages: [tinypkg==0.1.0]\n  index-url: ${index.url}\nenv:\n  TEAM: data\nstart: |\n  import tinypkg\n  started = 'yes'\n`
      await buildTemplate(parseSpec(spec, home), { home, name: 'host-pip', env: {} })
      venvProvider = new LocalProvider({ poolSize: 0, home })
    }, 300_000)
    afterAll(async () => {
      await venvProvider?.close()
      await index?.close()
      if (home) rmSync(home, { recursive: true, force: true })
    })

    it("run the venv's Python (/opt/venv, read-only) with the host's packages, the template's env and start step", async () => {
      const sandbox = await Sandbox.create({ provider: venvProvider, template: 'host-pip' })
      try {
        const execution = await sandbox.runCode(
          "import os, sys, pandas\nprint(sys.prefix, os.environ['TEAM'], started, 'tinypkg' in sys.modules)\nopen('/opt/venv/x', 'w')",
        )
        expect(execution.logs.stdout.join('')).toBe('/opt/venv data yes True\n')
        expect(execution.error?.name).toMatch(/OSError|PermissionError/)
      } finally {
        await sandbox.kill()
      }
    })
  },
)
