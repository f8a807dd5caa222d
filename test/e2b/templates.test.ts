/**
 * E2B's Template builder (the e2b SDK, unchanged) against `analyst serve`: refused unless the
 * server allows builds; a base that cannot be had here refused at once, with the bases that work.
 */
import { BuildError, Sandbox, Template } from 'e2b'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type E2BServer, startE2BServer } from './server.js'

describe("E2B's Template.build, refused", () => {
  let e2b: E2BServer
  beforeAll(async () => {
    e2b = await startE2BServer({ poolSize: 0 })
  })
  afterAll(async () => {
    await e2b?.close()
  })

  it('says builds are off, and how the operator turns them on, when the server was not started with --allow-template-builds', async () => {
    const template = Template().fromDebianImage('trixie').aptInstall('jq')
    const error = await Template.build(template, 'refused').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Error)
    expect(String((error as Error).message)).toMatch(
      /Template builds from API clients are off.*--allow-template-builds/s,
    )
    expect(await Template.exists('refused')).toBe(false)
    expect(await Template.exists('code-interpreter-v1')).toBe(true)
  })
})

describe("E2B's Template.build, a base that cannot be had", () => {
  let e2b: E2BServer
  let built = 0
  beforeAll(async () => {
    e2b = await startE2BServer({
      poolSize: 0,
      allowTemplateBuilds: true,
      templateBuilder: {
        build: async () => {
          built++
          throw new Error('no build should start')
        },
        parseSpec: () => {
          throw new Error('no spec here')
        },
      },
    })
  })
  afterAll(async () => {
    await e2b?.close()
  })

  it('refuses a registry image at once, naming the bases that work, and starts no build', async () => {
    const logs: string[] = []
    const template = Template().fromPythonImage('3.12').pipInstall('polars')
    const error = await Template.build(template, 'py312', {
      onBuildLogs: (entry) => void logs.push(entry.message),
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BuildError)
    expect((error as Error).message).toMatch(
      /python:3\.12" cannot be had here.*Bases that work: fromDebianImage\('bookworm'/s,
    )
    expect(built).toBe(0)
    expect(await Template.exists('py312')).toBe(false)
  })

  it('keeps one build per name: a tag other than latest is refused with a name to use', async () => {
    const error = await Template.build(Template().fromDebianImage('trixie'), 'mine:v2').catch(
      (e: unknown) => e,
    )
    expect((error as Error).message).toMatch(/one build per template name.*mine-v2/s)
  })
})

describe("E2B's Template.build with memoryMB and cpuCount, over the host's Python", () => {
  let e2b: E2BServer
  beforeAll(async () => {
    // The server's own default memory, which a template's goes over.
    process.env.ANALYST_SANDBOX_MEMORY = '1500M'
    try {
      e2b = await startE2BServer({ poolSize: 0, allowTemplateBuilds: true })
    } finally {
      delete process.env.ANALYST_SANDBOX_MEMORY
    }
  })
  afterAll(async () => {
    await e2b?.close()
  })

  it.runIf(process.getuid?.() === 0)(
    "gives the template's sandboxes its memory and cores, unless the caller sets its own",
    async () => {
      // Its sandboxes' default memory and cores (a build over the host needs no root file system).
      await Template.build(Template().fromTemplate('code-interpreter-v1'), 'small', {
        memoryMB: 1000,
        cpuCount: 1,
      })
      const sandbox = await Sandbox.create('small')
      try {
        expect(await sandbox.getInfo()).toMatchObject({ memoryMB: 1000, cpuCount: 1 })
        // The limit the engine was given (its cgroup's memory.max, as root), not only what is shown.
        const [metrics] = await sandbox.getMetrics()
        expect(metrics?.memTotal).toBe(1000 * 1024 ** 2)
      } finally {
        await sandbox.kill()
      }
      // The caller's own memory wins over the template's.
      const own = await fetch(`${e2b.url}/v2/sandboxes`, {
        method: 'POST',
        headers: { 'x-api-key': e2b.token, 'content-type': 'application/json' },
        body: JSON.stringify({ templateID: 'small', memoryMB: 400 }),
      })
      const { sandboxID } = (await own.json()) as { sandboxID: string }
      const info = await Sandbox.getInfo(sandboxID)
      await Sandbox.kill(sandboxID)
      expect(info).toMatchObject({ memoryMB: 400, cpuCount: 1 })
      // A session through /api (the web UI's, MCP's) gets the template's memory over the server's too.
      const api = (path: string, body: unknown) =>
        fetch(`${e2b.url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${e2b.token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      const session = (await (await api('/api/sessions', { template: 'small' })).json()) as { id: string }
      const cell = await api(`/api/sessions/${session.id}/cells`, {
        code: "import resource\nmib = resource.getrlimit(resource.RLIMIT_AS)[0] // 2**20\nif mib != 1000:\n    raise ValueError(f'{mib} MiB')",
      })
      const ran = (await cell.json()) as { violations: unknown[]; error?: { value: string } }
      expect(ran.error?.value).toBeUndefined()
      expect(ran.violations).toEqual([])
    },
    180_000,
  )
})
