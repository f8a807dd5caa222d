/**
 * The modal provider (Analyst's kernel in Modal Sandboxes through the official `modal` SDK, driven
 * unchanged), run against a fake Modal on 127.0.0.1 (src/test/modal-control-plane.ts) that speaks
 * Modal's gRPC protocol with the SDK's own definitions, each exec a local bubblewrap jail. The
 * shared conformance suite, then what is the provider's own.
 */
import { execFile, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { MockLanguageModelV3 } from 'ai/test'
import { Status } from 'nice-grpc'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AgentEvent, Analyst } from '../../src/agent/index.js'
import { systemPrompt } from '../../src/agent/prompt.js'
import { doctor } from '../../src/cli/commands/doctor.js'
import { ScriptedModel } from '../../src/models/scripted.js'
import { createProvider } from '../../src/providers.js'
import { Sandbox } from '../../src/sandbox/index.js'
import {
  MODAL_CAPABILITIES,
  ModalProvider,
  modalTools,
  parseModalTool,
  toolDescription,
  toolName,
} from '../../src/sandbox/modal/index.js'
import { sessionDetail } from '../../src/server/views.js'
import { loadSessionHistory } from '../../src/store/index.js'
import { describeConformance } from '../../src/test/conformance.js'
import {
  type FakeModal,
  joinableNamespaces,
  startFakeModal,
} from '../../src/test/support/modal-control-plane.js'
import { commitTemplate } from '../../src/test/support/templates.js'
import { askAll, openTestService } from '../support/service.js'
import { waitFor } from '../support/wait.js'

// Real credentials, read before the fake's address replaces Modal's: only then the live test runs.
const live =
  process.env.MODAL_TOKEN_ID && process.env.MODAL_TOKEN_SECRET && !process.env.MODAL_SERVER_URL
    ? { tokenId: process.env.MODAL_TOKEN_ID, tokenSecret: process.env.MODAL_TOKEN_SECRET }
    : undefined
if (!live)
  console.info('modal, live: skipped (set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET to run it against Modal)')

let fake: FakeModal
let provider: ModalProvider
beforeAll(async () => {
  fake = await startFakeModal()
  // The SDK reads its server from the environment when a client is made (at the first create).
  process.env.MODAL_SERVER_URL = fake.url
  provider = new ModalProvider({ tokenId: fake.tokenId, tokenSecret: fake.tokenSecret })
})
afterAll(async () => {
  delete process.env.MODAL_SERVER_URL
  await fake?.close()
})

const create = (options: Parameters<typeof Sandbox.create>[0] = {}) =>
  Sandbox.create({ provider, ...options })

describeConformance({ name: 'modal', create, capabilities: MODAL_CAPABILITIES })

describe('modal provider', () => {
  it('creates the sandbox with the network blocked and a timeout, builds the image once, and runs in it', async () => {
    const before = fake.calls.length
    const sandbox = await create()
    try {
      expect((await sandbox.runCode('import pandas as pd\nint(pd.Series([1, 2, 3]).sum())')).text).toBe('6')
      const created = fake.calls.slice(before).find((call) => call.method === 'SandboxCreateV2')
      expect(created?.request.definition.networkAccess.networkAccessType).toBe(2) // BLOCKED
      expect(created?.request.definition.timeoutSecs).toBe(3600)
      // Code cannot reach the network: the sandbox has none but loopback.
      const probe = await sandbox.runCode(
        "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    print('reached')\nexcept OSError as e:\n    print('blocked')",
      )
      expect(probe.logs.stdout).toEqual(['blocked\n'])
      // The host's environment does not enter.
      expect((await sandbox.runCode("import os\n'MODAL_SERVER_URL' in os.environ")).text).toBe('False')
      // The image (Python 3.11 with the data stack) is built once for all the provider's sandboxes.
      const builds = fake.calls.filter((call) => call.method === 'ImageGetOrCreate')
      expect(builds.map((call) => call.request.image.dockerfileCommands)).toEqual([
        ['FROM python:3.11-slim-bookworm'],
        ['FROM base', expect.stringMatching(/^RUN pip install .*pandas.*statsmodels openpyxl$/)],
      ])
    } finally {
      await sandbox.kill()
    }
    expect(fake.sandboxes.get(sandbox.sandboxId)?.terminated).toBe(true)
  })

  // The SDK reads ~/.modal.toml when it loads: where one exists there are credentials to find.
  it.skipIf(existsSync(join(homedir(), '.modal.toml')) || process.env.MODAL_CONFIG_PATH)(
    'says what to set when there are no credentials',
    async () => {
      const saved = { id: process.env.MODAL_TOKEN_ID, secret: process.env.MODAL_TOKEN_SECRET }
      delete process.env.MODAL_TOKEN_ID
      delete process.env.MODAL_TOKEN_SECRET
      try {
        await expect(Sandbox.create({ provider: new ModalProvider({}) })).rejects.toMatchObject({
          name: 'SandboxUnavailableError',
          message: 'Modal credentials are not set',
          hint: expect.stringContaining('MODAL_TOKEN_ID'),
        })
      } finally {
        if (saved.id !== undefined) process.env.MODAL_TOKEN_ID = saved.id
        if (saved.secret !== undefined) process.env.MODAL_TOKEN_SECRET = saved.secret
      }
    },
  )

  it('says the token was refused when Modal answers UNAUTHENTICATED', async () => {
    const wrong = new ModalProvider({ tokenId: 'ak-wrong', tokenSecret: 'as-expired' })
    await expect(Sandbox.create({ provider: wrong })).rejects.toMatchObject({
      name: 'SandboxUnavailableError',
      message: expect.stringContaining('Modal refused the credentials'),
      hint: expect.stringContaining('expired'),
    })
  })

  it('says Modal did not answer when it is UNAVAILABLE, after the SDK retried', async () => {
    const before = fake.calls.length
    fake.fail('SandboxCreateV2', Status.UNAVAILABLE, 'upstream connect error')
    try {
      await expect(create()).rejects.toMatchObject({
        name: 'SandboxUnavailableError',
        message: expect.stringContaining('Modal did not answer while creating a sandbox'),
      })
      // The SDK retried (3 times) before giving up.
      expect(fake.calls.slice(before).filter((call) => call.method === 'SandboxCreateV2').length).toBe(4)
    } finally {
      fake.clearFaults()
    }
  })

  it('ends a cell with a clear error, not a hang, when the kernel output stream drops, and goes on', async () => {
    const sandbox = await create()
    try {
      await sandbox.runCode('kept = 1')
      const execution = await sandbox.runCode("import time\nprint('started', flush=True)\ntime.sleep(30)", {
        timeoutMs: 60_000,
        onStdout: () => fake.dropStdio(sandbox.sandboxId),
      })
      expect(execution.error?.name).toBe('KernelDied')
      expect(execution.error?.value).toMatch(/connection to it through Modal was lost/)
      expect((await sandbox.runCode('2 * 21')).text).toBe('42')
      // The kernel that could no longer be heard was ended (EOF on its stdin), not left running.
      const [lost] = fake.sandboxes.get(sandbox.sandboxId)?.execs.values() ?? []
      await waitFor(() => lost?.exit, { what: 'the unheard kernel to exit' })
    } finally {
      await sandbox.kill()
    }
  }, 60_000)
})

describe('the fake Modal container', () => {
  // bubblewrap names a container's init before that init has mapped its user namespace; an exec
  // that joined then failed with "Can't send pid: Invalid argument" (the kernel's start, under load).
  it('lets an exec join a container only once its user namespace is mapped', async () => {
    const unshare = spawn('unshare', ['--user', '--pid', '--fork', '--kill-child', 'sleep', 'infinity'], {
      stdio: 'ignore',
    })
    try {
      const children = `/proc/${unshare.pid}/task/${unshare.pid}/children`
      await expect.poll(() => readFileSync(children, 'utf8').trim(), { timeout: 10_000 }).not.toBe('')
      const init = Number(readFileSync(children, 'utf8').trim())
      expect(readlinkSync(`/proc/${init}/ns/user`)).not.toBe(readlinkSync('/proc/self/ns/user'))
      const join = (fds: { user: number; pid: number }) =>
        new Promise<{ code: number | null; stderr: string }>((done) => {
          const bwrap = spawn('bwrap', ['--userns', '3', '--pidns', '4', '--ro-bind', '/', '/', 'true'], {
            stdio: ['ignore', 'ignore', 'pipe', fds.user, fds.pid],
          })
          let stderr = ''
          bwrap.stderr?.on('data', (chunk: Buffer) => {
            stderr += chunk.toString()
          })
          bwrap.on('close', (code) => done({ code, stderr }))
        })
      // Joined too early, as the fake did: the failure the stress run saw.
      const early = {
        user: openSync(`/proc/${init}/ns/user`, 'r'),
        pid: openSync(`/proc/${init}/ns/pid`, 'r'),
      }
      expect((await join(early)).stderr).toContain("Can't send pid")
      closeSync(early.user)
      closeSync(early.pid)
      let opened = false
      const namespaces = joinableNamespaces(init).then((fds) => {
        opened = true
        return fds
      })
      await new Promise((resolve) => setImmediate(resolve))
      expect(opened).toBe(false) // not before the maps, however long it waits
      // What bubblewrap's child does for itself: map its user, deny setgroups, map its group.
      writeFileSync(`/proc/${init}/uid_map`, `0 ${process.getuid?.()} 1`)
      writeFileSync(`/proc/${init}/setgroups`, 'deny')
      writeFileSync(`/proc/${init}/gid_map`, `0 ${process.getgid?.()} 1`)
      const fds = await namespaces
      expect(await join(fds)).toEqual({ code: 0, stderr: '' })
      closeSync(fds.user)
      closeSync(fds.pid)
    } finally {
      unshare.kill('SIGKILL')
    }
  })
})

describe('modal templates', () => {
  /** A template in a store of its own, as a build leaves it: its manifest and the recipe it was built from. */
  function storeWith(name: string, recipe: unknown, env: Record<string, string> = {}) {
    const home = mkdtempSync(join(tmpdir(), 'analyst-modal-templates-'))
    const id = createHash('sha256').update(JSON.stringify(recipe)).digest('hex')
    commitTemplate(home, id, {
      name,
      // The fake runs the kernel with the host's Python; on Modal it is the image's.
      manifest: { hasRootfs: false, python: { path: 'python3', version: '3.13.5' }, env },
      fill: (folder) => writeFileSync(join(folder, 'recipe.json'), JSON.stringify(recipe)),
    })
    return home
  }

  it("builds a template's recipe as a Modal image (Debian's image, the kernel's packages, the venv, its steps) and runs in it with its env", async () => {
    const home = storeWith(
      'jq',
      {
        base: { kind: 'debian', suite: 'trixie', slim: true },
        steps: [
          { type: 'run', command: 'apt-get update && apt-get install -y jq' },
          { type: 'run', command: 'pip install polars==1.9.0', user: 'root' },
          { type: 'env', vars: { TEMPLATE_SAYS: 'hello there' } },
        ],
      },
      { FROM_MANIFEST: 'yes' },
    )
    const withHome = new ModalProvider({ tokenId: fake.tokenId, tokenSecret: fake.tokenSecret, home })
    const before = fake.calls.length
    const sandbox = await Sandbox.create({ provider: withHome, template: 'jq' })
    try {
      expect((await sandbox.runCode("import os\nos.environ['FROM_MANIFEST']")).text).toBe("'yes'")
      const builds = fake.calls.slice(before).filter((call) => call.method === 'ImageGetOrCreate')
      expect(builds.map((call) => call.request.image.dockerfileCommands)).toContainEqual([
        'FROM base',
        expect.stringMatching(/apt-get install -y --no-install-recommends python3 python3-venv python3-pip/),
        'RUN python3 -m venv --system-site-packages /opt/venv',
        'ENV PATH=/opt/venv/bin:$PATH VIRTUAL_ENV=/opt/venv',
        'RUN apt-get update && apt-get install -y jq',
        'RUN pip install polars==1.9.0',
        'ENV TEMPLATE_SAYS="hello there"',
      ])
      expect(builds.map((call) => call.request.image.dockerfileCommands)).toContainEqual([
        'FROM debian:trixie-slim',
      ])
    } finally {
      await sandbox.kill()
      rmSync(home, { recursive: true, force: true })
    }
  })

  it('refuses a template that copies files in, saying why, before anything is made on Modal', async () => {
    const home = storeWith('files', {
      base: { kind: 'debian', suite: 'trixie', slim: false },
      steps: [{ type: 'copy', src: 'lib', dest: '/opt/lib' }],
    })
    try {
      const withHome = new ModalProvider({ tokenId: fake.tokenId, tokenSecret: fake.tokenSecret, home })
      const before = fake.calls.length
      await expect(Sandbox.create({ provider: withHome, template: 'files' })).rejects.toThrow(
        /copies files in \(COPY lib\), which a Modal image cannot take from this host/,
      )
      expect(fake.calls.slice(before).filter((call) => call.method === 'SandboxCreateV2')).toEqual([])
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})

describe('modal kernels deaf to the interrupt and to EOF', () => {
  it('ends the kernel with a kill from a second exec, which shares the container with it as on Modal', async () => {
    const quick = new ModalProvider({
      tokenId: fake.tokenId,
      tokenSecret: fake.tokenSecret,
      interruptGraceMs: 300,
    })
    const sandbox = await Sandbox.create({ provider: quick })
    try {
      await sandbox.runCode('kept = 1')
      const execs = () => [...(fake.sandboxes.get(sandbox.sandboxId)?.execs.values() ?? [])]
      const [kernel] = execs()
      expect(kernel?.args[0]).toBe('python3')
      // A C loop that never lets go of the GIL: the kernel's IO thread can neither pass on the
      // interrupt nor hear stdin close, so only a signal from outside the process ends it.
      const execution = await sandbox.runCode('import itertools\nsum(itertools.repeat(1, 10**13))', {
        timeoutMs: 300,
      })
      expect(execution.error?.name).toBe('TimeoutError')
      expect(execution.error?.value).toMatch(
        /The cell that ran without error before runs again in a new kernel/,
      )
      // The second exec found the kernel's process group by the PID the kernel reported, and ended it.
      const kill = await waitFor(
        () => execs().find((exec) => exec.args[0] === 'kill' && exec.exit !== undefined),
        { what: 'the kill exec to finish' },
      )
      expect(kill.args).toEqual(['kill', '-KILL', '--', expect.stringMatching(/^-\d+$/)])
      expect(kill.exit).toEqual({ code: 0 })
      await waitFor(() => kernel?.exit, { what: 'the first kernel to end' })
      // A new kernel takes the next cells, the one cell before the stuck one run again in it.
      expect((await sandbox.runCode('kept')).text).toBe('1')
      expect((await sandbox.runCode('1 + 1')).text).toBe('2')
    } finally {
      await sandbox.kill()
    }
  }, 60_000)
})

describe('modal GPUs', () => {
  it('asks Modal for the GPUs as gpuConfig, and the sandbox and the prompt know them', async () => {
    const gpu = new ModalProvider({
      tokenId: fake.tokenId,
      tokenSecret: fake.tokenSecret,
      gpu: 'a10g:2',
      image: 'nvcr.io/nvidia/pytorch:24.01-py3',
    })
    const before = fake.calls.length
    const sandbox = await Sandbox.create({ provider: gpu })
    try {
      // GPUs go through the SDK's first create call (SandboxCreate), which takes them.
      // The image the user named, as it is: no layer of Analyst's on it.
      const builds = fake.calls.slice(before).filter((call) => call.method === 'ImageGetOrCreate')
      expect(builds.map((call) => call.request.image.dockerfileCommands)).toEqual([
        ['FROM nvcr.io/nvidia/pytorch:24.01-py3'],
      ])
      const created = fake.calls.slice(before).find((call) => call.method === 'SandboxCreate')
      expect(created?.request.definition.resources.gpuConfig).toMatchObject({ gpuType: 'A10G', count: 2 })
      expect(sandbox.gpu).toBe('A10G:2')
      expect((await sandbox.runCode("import os\nos.environ['ANALYST_GPU']")).text).toBe("'A10G:2'")
      expect(systemPrompt({ mode: 'tools', dataDescription: '', gpu: sandbox.gpu })).toContain(
        'A GPU is attached (A10G:2',
      )
      expect(systemPrompt({ mode: 'tools', dataDescription: '' })).not.toContain('GPU')
    } finally {
      await sandbox.kill()
    }
  })

  it('refuses GPUs it does not know, and engines that cannot give one refuse --gpu', async () => {
    expect(() => new ModalProvider({ gpu: 'Z80' })).toThrow(/not a GPU Modal offers/)
    await expect(createProvider('local', { gpu: 'T4', env: {} })).rejects.toMatchObject({
      name: 'InvalidArgumentError',
      message: 'The local engine cannot give a GPU (T4 asked for)',
      fix: { setting: 'sandbox', example: 'modal' },
    })
    await expect(createProvider('e2b', { env: { ANALYST_GPU: 'H100', E2B_API_KEY: 'k' } })).rejects.toThrow(
      /cannot give a GPU/,
    )
  })
})

describe('modal functions as tools', () => {
  const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3])
  beforeAll(() => {
    fake.deployFunction('sd', 'generate', (args, kwargs) => ({
      prompt: args[0],
      seed: kwargs.seed,
      image: PNG,
    }))
    fake.deployFunction('sd', 'broken', () => {
      throw new Error('CUDA out of memory')
    })
    fake.deployFunction('sd', 'slow', () => new Promise((resolve) => setTimeout(() => resolve('late'), 3000)))
  })

  it('calls a deployed function with .remote(): text back for the model, bytes as files', async () => {
    const spec = parseModalTool('sd/generate=makes an image from a prompt')
    expect(spec).toEqual({ app: 'sd', function: 'generate', description: 'makes an image from a prompt' })
    expect(toolName(spec)).toBe('modal_sd_generate')
    expect(toolDescription(spec)).toContain('makes an image from a prompt')
    const outcome = await provider.functions().call(spec, { args: ['a red bicycle'], kwargs: { seed: 7 } })
    expect(outcome.ok).toBe(true)
    expect(outcome.files).toEqual([{ name: 'modal_sd_generate-image.png', data: PNG, mimeType: 'image/png' }])
    expect(JSON.parse(outcome.observation)).toEqual({
      prompt: 'a red bicycle',
      seed: 7,
      image: '<11 bytes, saved as modal_sd_generate-image.png>',
    })
    const map = fake.calls.filter((call) => call.method === 'FunctionMap').at(-1)
    expect(map?.request.pipelinedInputs[0].input.dataFormat).toBe(4) // CBOR
  })

  it('gives failures, timeouts and unknown functions to the model as observations', async () => {
    const broken = await provider.functions().call(parseModalTool('sd/broken'), {})
    expect(broken).toMatchObject({ ok: false, files: [] })
    expect(broken.observation).toMatch(/sd\/broken failed: .*CUDA out of memory/)
    const slow = await provider.functions(500).call(parseModalTool('sd/slow'), {})
    expect(slow.observation).toMatch(/sd\/slow failed: no answer within 0.5 s/)
    const missing = await provider.functions().call(parseModalTool('sd/nothing'), {})
    expect(missing.observation).toMatch(/No function nothing is deployed in the Modal app sd/)
    const invalid = await provider.functions().call(parseModalTool('sd/generate'), { args: 'x' })
    expect(invalid.observation).toMatch(/invalid arguments/)
    expect(() => parseModalTool('no-slash')).toThrow(/is not a Modal function/)
  })
})

describe('modal functions in the analysis loop', () => {
  it('offers the function to the model, saves what it returns as the step artifacts, and code can read them', async () => {
    fake.deployFunction('sd', 'generate', () => ({ image: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 9, 9]) }))
    const tools = await modalTools(['sd/generate=makes an image from a prompt'], {
      tokenId: fake.tokenId,
      tokenSecret: fake.tokenSecret,
    })
    await expect(
      modalTools(['sd/absent'], { tokenId: fake.tokenId, tokenSecret: fake.tokenSecret }),
    ).rejects.toThrow(/No function absent is deployed/)
    const sandbox = await create()
    const scripted = new ScriptedModel([
      { toolCall: { name: 'modal_sd_generate', input: JSON.stringify({ args: ['a red bicycle'] }) } },
      { code: "import os\nprint(os.path.getsize('modal_sd_generate-image.png'))" },
      { text: 'The image has 6 bytes.' },
    ])
    try {
      const analyst = new Analyst({ model: scripted, mode: 'tools', sandbox, dataDescription: '', tools })
      const events: AgentEvent[] = []
      for await (const event of analyst.ask('Draw a red bicycle')) events.push(event)
      const offered = (scripted.calls[0]?.tools ?? []).map((tool) => tool.name)
      expect(offered).toEqual(['run_python', 'modal_sd_generate'])
      expect(
        events.filter((e) => e.type === 'artifact').map((e) => e.type === 'artifact' && e.artifact),
      ).toEqual([
        {
          name: 'modal_sd_generate-image.png',
          path: '/home/user/modal_sd_generate-image.png',
          size: 6,
          mimeType: 'image/png',
        },
      ])
      const observations = events.flatMap((e) => (e.type === 'observation' ? [e.text] : []))
      expect(observations[0]).toContain('saved as modal_sd_generate-image.png')
      expect(observations[1]).toContain('6')
      const done = events.at(-1)
      expect(done?.type === 'done' && done.result.answer).toBe('The image has 6 bytes.')
    } finally {
      await sandbox.kill()
    }
  })
})

describe('modal functions in the record', () => {
  it('keeps each call as a step: its name and arguments, what it returned or why it failed, and its files', async () => {
    const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 7, 7])
    fake.deployFunction('sd', 'paint', (args) => ({ prompt: args[0], width: 512, image: PNG }))
    fake.deployFunction('sd', 'melt', () => {
      throw new Error('CUDA out of memory')
    })
    const settings = { tokenId: fake.tokenId, tokenSecret: fake.tokenSecret }
    const tools = await modalTools(['sd/paint=paints a picture', 'sd/melt'], settings)
    // The AI SDK's own mock model, replying from a script, through the session service's loop.
    const scripted = new ScriptedModel([
      { toolCall: { name: 'modal_sd_paint', input: JSON.stringify({ args: ['a red bicycle'] }) } },
      { toolCall: { name: 'modal_sd_melt', input: JSON.stringify({ kwargs: { steps: 50 } }) } },
      { code: "import os\nprint(os.path.getsize('modal_sd_paint-image.png'))" },
      { text: 'The picture is 512 pixels wide and its file has 10 bytes.' },
      {
        code: "print(open('modal_sd_paint-image.png', 'rb').read() == bytes([137, 80, 78, 71, 13, 10, 26, 10, 7, 7]))",
      },
      { text: 'The picture is still there.' },
    ])
    const model = new MockLanguageModelV3({
      doGenerate: (options) => scripted.doGenerate(options),
      doStream: (options) => scripted.doStream(options),
    })
    const test = await openTestService({ provider, model, analyst: { tools } })
    try {
      const { id } = await test.service.createSession()
      await test.service.addData(id, [{ path: resolve('examples/sales.csv') }])
      const { events, result } = await askAll(test.service, id, 'Paint a red bicycle')
      // Live, the call's result streams as the step's output, its failure as the step's error.
      expect(events).toContainEqual({
        type: 'stdout',
        step: 1,
        text: expect.stringContaining('"width": 512'),
      })
      expect(events).toContainEqual({
        type: 'error',
        step: 2,
        error: expect.objectContaining({
          name: 'ToolError',
          value: expect.stringMatching(/CUDA out of memory/),
        }),
      })
      expect(result.answer).toBe('The picture is 512 pixels wide and its file has 10 bytes.')
      expect(result.steps.map((step) => step.tool)).toEqual([
        { name: 'modal_sd_paint', input: { args: ['a red bicycle'] } },
        { name: 'modal_sd_melt', input: { kwargs: { steps: 50 } } },
        undefined,
      ])

      // Stored like code steps: the call as a comment, its result as output, its files as blobs.
      const steps = await test.stores.history.steps(id)
      expect(steps.map((step) => [step.code, step.success])).toEqual([
        ['# modal_sd_paint({"args":["a red bicycle"]})', true],
        ['# modal_sd_melt({"kwargs":{"steps":50}})', false],
        ["import os\nprint(os.path.getsize('modal_sd_paint-image.png'))", true],
      ])
      expect(JSON.parse(steps[0]?.stdout ?? '')).toEqual({
        prompt: 'a red bicycle',
        width: 512,
        image: '<10 bytes, saved as modal_sd_paint-image.png>',
      })
      expect(steps[1]?.error).toMatchObject({
        name: 'ToolError',
        value: expect.stringMatching(/sd\/melt failed/),
      })
      expect(steps[2]?.stdout).toBe('10\n')

      // What GET /api/sessions/:id, `analyst show --json` and the web UI's replay read.
      const history = await loadSessionHistory(test.stores.history, id)
      const detail = sessionDetail(history as NonNullable<typeof history>)
      const [paint, melt] = detail.runs[0]?.steps ?? []
      expect(paint).toMatchObject({
        code: '# modal_sd_paint({"args":["a red bicycle"]})',
        stdout: expect.stringContaining('saved as modal_sd_paint-image.png'),
        artifacts: [
          {
            name: 'modal_sd_paint-image.png',
            size: 10,
            mimeType: 'image/png',
            url: `/api/sessions/${id}/artifacts/modal_sd_paint-image.png`,
          },
        ],
      })
      expect(melt?.error?.name).toBe('ToolError')
      const [file] = history?.runs[0]?.steps[0]?.files ?? []
      const blob = await test.stores.blobs.get(file?.sha256 as string)
      expect(new Uint8Array(Buffer.concat(await (blob as NonNullable<typeof blob>).toArray()))).toEqual(PNG)
      expect(steps[0]?.tool).toEqual({ name: 'modal_sd_paint', input: { args: ['a red bicycle'] } })

      // Reopened (a new sandbox): the code steps replay, the call's file is written back, not called again.
      await test.service.close(id)
      const called = () => fake.calls.filter((call) => call.method === 'FunctionMap').length
      const calls = called()
      const again = await askAll(test.service, id, 'Is the picture still there?')
      expect(again.events.find((e) => e.type === 'ready')).toMatchObject({ replayed: { ran: 1, failed: 0 } })
      expect(again.result.steps[0]?.execution?.logs.stdout.join('')).toBe('True\n')
      expect(called()).toBe(calls)
    } finally {
      await test.close()
    }
  }, 120_000)
})

describe('analyst doctor --sandbox modal', () => {
  it('checks the credentials and a sandbox that runs a cell, and says what Modal does not enforce', async () => {
    const out: string[] = []
    const stdout = { write: (text: string) => out.push(text) } as unknown as NodeJS.WritableStream
    const env = { MODAL_TOKEN_ID: fake.tokenId, MODAL_TOKEN_SECRET: fake.tokenSecret, ANALYST_GPU: 'T4' }
    expect(await doctor({ json: true, sandbox: 'modal', env, stdout })).toBe(0)
    const { checks } = JSON.parse(out.join('')) as {
      checks: Array<{ name: string; ok: boolean; detail: string }>
    }
    expect(checks[0]).toMatchObject({ name: 'modal sandbox', ok: true })
    expect(checks[0]?.detail).toMatch(
      /credentials accepted; sandbox sb-\w+ created in [\d.]+ s with GPU T4; Python 3\.\d+/,
    )
    expect(checks[1]).toMatchObject({ name: 'isolation', ok: false })
    out.length = 0
    const refused = { MODAL_TOKEN_ID: 'ak-old', MODAL_TOKEN_SECRET: 'as-old' }
    expect(await doctor({ json: true, sandbox: 'modal', env: refused, stdout })).toBe(1)
    expect(JSON.parse(out.join('')).checks[0]).toMatchObject({
      ok: false,
      detail: expect.stringContaining('Modal refused the credentials'),
      fix: expect.stringContaining('MODAL_TOKEN_SECRET'),
    })
  })
})

describe.skipIf(!live)('modal, live (MODAL_TOKEN_ID and MODAL_TOKEN_SECRET set)', () => {
  it('runs a pandas cell in a real Modal sandbox and ends it', async () => {
    const real = new ModalProvider({
      tokenId: live?.tokenId,
      tokenSecret: live?.tokenSecret,
      lifetimeMs: 600_000,
    })
    // The SDK reads its server when its client is made (at the first create): Modal's, not the fake's.
    const fakeUrl = process.env.MODAL_SERVER_URL
    delete process.env.MODAL_SERVER_URL
    const sandbox = await Sandbox.create({ provider: real }).finally(() => {
      process.env.MODAL_SERVER_URL = fakeUrl
    })
    try {
      const execution = await sandbox.runCode(
        "import pandas as pd\nint(pd.DataFrame({'a': [1, 2, 3]}).a.sum())",
      )
      expect(execution.text).toBe('6')
    } finally {
      await sandbox.kill()
    }
  }, 600_000)
})

describe('analyst run --sandbox modal', () => {
  it('runs a file in a Modal sandbox with the Modal variables, and other engines refuse --gpu', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'analyst-modal-cli-'))
    writeFileSync(join(dir, 'prices.csv'), 'item,price\napple,1.5\npear,2.5\n')
    writeFileSync(
      join(dir, 'mean.py'),
      "import pandas as pd\nprint(pd.read_csv('data/prices.csv').price.mean())\n",
    )
    const cli = (args: string[], env: Record<string, string>) =>
      // Asynchronously: the fake answering the command lives in this process.
      promisify(execFile)(process.execPath, [resolve('dist/cli/bin.js'), ...args], {
        cwd: dir,
        env: { ...process.env, NO_COLOR: '1', ...env },
        timeout: 120_000,
      })
    try {
      const modal = {
        MODAL_TOKEN_ID: fake.tokenId,
        MODAL_TOKEN_SECRET: fake.tokenSecret,
        MODAL_SERVER_URL: fake.url,
      }
      const { stdout } = await cli(
        ['run', 'mean.py', '--data', 'prices.csv', '--sandbox', 'modal', '--gpu', 'T4'],
        modal,
      )
      expect(stdout).toContain('2.0')
      const refused = await cli(['run', 'mean.py', '--sandbox', 'local', '--gpu', 'T4'], {}).catch(
        (error: { code: number; stderr: string }) => error,
      )
      expect(refused).toMatchObject({ code: 2, stderr: expect.stringContaining('cannot give a GPU') })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 180_000)
})
