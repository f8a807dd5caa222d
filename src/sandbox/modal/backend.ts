/**
 * The modal engine: each sandbox is a Modal Sandbox (a container on Modal's cloud, GPUs on
 * request) running Analyst's own kernel (kernel.ts), so results, charts, artifacts and limits are
 * those of the local engine. Files and commands go through the kernel's command channel (they
 * answer while a cell runs); artifacts are found by listing the workspace after each cell. Modal
 * blocks the network unless asked, and a sandbox timeout ends the container (and its billing)
 * when Analyst is gone.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { App, Image, ModalClient, Sandbox as ModalSdkSandbox } from 'modal'
import { resolveTemplate } from '../../templates/store.js'
import type { BuiltTemplate } from '../../templates/types.js'
import type {
  CommandProcess,
  DoStartCommandOptions,
  EntryInfo,
  SandboxBackend,
  SandboxCapabilities,
  SandboxCreateOptions,
  SandboxLimits,
  SandboxProvider,
} from '../backend.js'
import { assertSupported, FULL_CAPABILITIES, missingCapabilities } from '../capabilities.js'
import { signalExit } from '../cell-output.js'
import { finishCreate } from '../create-data.js'
import { InvalidArgumentError, NotFoundError, SandboxError } from '../errors.js'
import { KernelBackend, sandboxPath } from '../kernel/backend.js'
import { kernelEnv } from '../kernel/env.js'
import { resolveLimits } from '../kernel/limits.js'
import type { Artifact } from '../messaging.js'
import { dataFileSize, SANDBOX_HOME } from '../paths.js'
import type { QueryHost } from '../query.js'
import { changedFiles, parseListing, WORKSPACE_LISTING } from '../snapshot.js'
import { createModalClient, ModalFunctions } from './functions.js'
import { type KernelStopped, ModalKernel } from './kernel.js'
import { DEFAULT_BASE_IMAGE, DEFAULT_PACKAGES, fromModal, parseGpu } from './settings.js'
import { templateImageCommands } from './template-image.js'

export interface ModalProviderOptions {
  /** @default MODAL_TOKEN_ID, else ~/.modal.toml */
  tokenId?: string
  /** @default MODAL_TOKEN_SECRET, else ~/.modal.toml */
  tokenSecret?: string
  /** Modal environment. @default MODAL_ENVIRONMENT, else the profile's */
  environment?: string
  /** The Modal App that sandboxes belong to (created if missing). @default 'analyst' */
  appName?: string
  /**
   * A registry image with Python 3 and the data stack (a GPU image with torch, cudf…), used as it
   * is. @default Python 3.11 (python:3.11-slim-bookworm) with `packages` installed by pip
   */
  image?: string
  /** What pip installs on the default image. @default pandas, numpy, scipy, matplotlib, seaborn, scikit-learn, statsmodels, openpyxl */
  packages?: string[]
  /** GPUs for every sandbox: `A10G`, `H100:2`… @default none */
  gpu?: string
  /** Python in the image. @default 'python3' */
  python?: string
  /** How long a sandbox may live; Modal ends it then, whatever Analyst does. @default 1 hour */
  lifetimeMs?: number
  /** How long an interrupted cell may take to stop before its kernel is ended. @default 3000 */
  interruptGraceMs?: number
  /** How long the kernel may take to start in a new sandbox. @default 120000 */
  readyTimeoutMs?: number
  /** Where templates named by `create({ template })` are looked up (its templates/). @default ANALYST_HOME */
  home?: string
}

/**
 * What Analyst enforces on Modal: the container is the isolation (no host files or variables, the
 * network blocked by Modal unless asked, teardown by terminating it); the kernel applies its
 * per-process limits, Modal the memory. Code runs as root in the container: data files cannot be
 * made read-only, and there is no process or workspace-size limit.
 */
export const MODAL_CAPABILITIES: SandboxCapabilities = {
  ...FULL_CAPABILITIES,
  readOnlyData: false,
  limits: ['memoryBytes', 'fileSizeBytes', 'cpuSeconds', 'openFiles', 'outputBytes', 'resultBytes'],
  // Its kernel could make one, but Modal's container is not known to give it /dev/pts.
  terminals: false,
  // A template is built as a Modal image from its recipe's steps (template-image.ts).
  templates: 'built',
}

const DATA = `${SANDBOX_HOME}/data`
/** Bytes per stdin message of a file moving in. */
const CHUNK = 1024 * 1024

const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`

function entry(path: string, line: string): EntryInfo | undefined {
  const [kind, size, name] = line.split('\t')
  if (!kind || name === undefined) return undefined
  return { name, type: kind === 'd' ? 'dir' : 'file', path, size: kind === 'd' ? 0 : Number(size) }
}

interface CommandResult {
  code: number
  stdout: Buffer
  stderr: string
}

class ModalSandbox extends KernelBackend<ModalKernel> {
  readonly provider = 'modal'
  readonly gpu: string | undefined
  private snapshot = new Map<string, string>()
  /** Set after the host wrote files: the next cell takes a fresh snapshot first, so they are not its artifacts. */
  private stale = true

  constructor(
    private readonly sdk: ModalSdkSandbox,
    kernel: ModalKernel,
    private readonly start: () => Promise<ModalKernel>,
    limits: SandboxLimits,
    interruptGraceMs: number,
    gpu: string | undefined,
    sources: QueryHost | undefined,
  ) {
    super(kernel, { limits, interruptGraceMs, sources })
    this.gpu = gpu
  }

  get sandboxId(): string {
    return this.sdk.sandboxId
  }

  protected startKernel(): Promise<ModalKernel> {
    return this.start()
  }

  /** At once: EOF on its stdin and a kill from a second exec (it already had its interrupt's grace). */
  protected stopKernel(kernel: ModalKernel): Promise<KernelStopped> {
    return kernel.kill(0)
  }

  protected async describeStop(kernel: ModalKernel): Promise<string> {
    const stopped = await kernel.whenExited()
    if (stopped.lost) return 'the connection to it through Modal was lost'
    if (stopped.code !== null && stopped.code > 128) return signalExit(stopped.code)
    return `exit code ${stopped.code}`
  }

  protected override restartFailed(cause: unknown): Error {
    return fromModal(cause, 'restarting the kernel')
  }

  protected override async beforeCell() {
    if (this.stale) {
      this.snapshot = await this.files().catch(() => this.snapshot)
      this.stale = false
    }
  }

  /**
   * Runs a shell command through the kernel and collects its output: how files move. Input, if
   * any, goes to its stdin in pieces.
   */
  private async command(cmd: string, input?: AsyncIterable<Uint8Array> | Uint8Array): Promise<CommandResult> {
    const kernel = await this.kernel()
    const id = randomBytes(8).toString('hex')
    const stdout: Buffer[] = []
    let stderr = ''
    let exited!: (result: CommandResult) => void
    const done = new Promise<CommandResult>((resolve) => {
      exited = resolve
    })
    await kernel.spawn(
      { type: 'spawn', id, cmd, cwd: SANDBOX_HOME, stdin: input !== undefined },
      (message) => {
        if (message.type === 'proc-out') {
          const data = Buffer.from(message.data, 'base64')
          if (message.stream === 'stdout') stdout.push(data)
          else stderr += data.toString('utf8')
        } else if (message.type === 'proc-exit') {
          exited({
            code: message.code,
            stdout: Buffer.concat(stdout),
            stderr: stderr + (message.error ?? ''),
          })
        }
      },
    )
    if (input !== undefined) {
      const pieces = input instanceof Uint8Array ? [input] : input
      for await (const piece of pieces) {
        for (let offset = 0; offset < piece.length; offset += CHUNK) {
          const data = Buffer.from(piece.subarray(offset, offset + CHUNK)).toString('base64')
          kernel.control({ type: 'proc-stdin', id, data })
        }
      }
      kernel.control({ type: 'proc-close-stdin', id })
    }
    const result = await done
    if (!kernel.alive && result.code === -1)
      throw new SandboxError(`The sandbox kernel stopped while ${cmd.split(' ')[0]} ran`)
    return result
  }

  private failure(path: string, result: CommandResult): Error {
    if (/No such file|not found/i.test(result.stderr))
      return new NotFoundError(`${path}: no such file in the sandbox`)
    if (/Is a directory/.test(result.stderr)) return new InvalidArgumentError(`${path} is not a regular file`)
    if (/Not a directory/.test(result.stderr))
      return new InvalidArgumentError(`${path}: a part of it is not a folder`)
    return new SandboxError(`${path}: ${result.stderr.trim() || `exit code ${result.code}`}`)
  }

  private async files(): Promise<Map<string, string>> {
    const { stdout } = await this.command(WORKSPACE_LISTING)
    return parseListing(stdout.toString('utf8'))
  }

  protected async artifacts(): Promise<Artifact[]> {
    const now = await this.files().catch(() => undefined)
    if (!now) return []
    const changed = changedFiles(this.snapshot, now)
    this.snapshot = now
    return changed
  }

  private async write(target: string, input: AsyncIterable<Uint8Array> | Uint8Array, readOnly = false) {
    const folder = target.slice(0, target.lastIndexOf('/')) || '/'
    const result = await this.command(
      `mkdir -p -- ${quote(folder)} && rm -f -- ${quote(target)} && cat > ${quote(target)}${readOnly ? ` && chmod a-w -- ${quote(target)}` : ''}`,
      input,
    )
    if (result.code !== 0) throw this.failure(target, result)
    this.stale = true
  }

  async doWriteFile(path: string, data: Uint8Array): Promise<EntryInfo> {
    const target = sandboxPath(path)
    await this.write(target, data)
    return { name: target.slice(target.lastIndexOf('/') + 1), type: 'file', path: target, size: data.length }
  }

  async doReadFile(path: string): Promise<Uint8Array> {
    const target = sandboxPath(path)
    const result = await this.command(`cat -- ${quote(target)}`)
    if (result.code !== 0) throw this.failure(path, result)
    return new Uint8Array(result.stdout)
  }

  async doList(path: string): Promise<EntryInfo[]> {
    const target = sandboxPath(path)
    const result = await this.command(
      `cd -- ${quote(target)} && find . -mindepth 1 -maxdepth 1 -printf '%y\\t%s\\t%f\\n'`,
    )
    if (result.code !== 0) throw this.failure(path, result)
    return result.stdout
      .toString('utf8')
      .split('\n')
      .map((line) => entry(`${target}/${line.split('\t')[2]}`, line))
      .filter((found): found is EntryInfo => found !== undefined)
      .sort((a, b) => a.name.localeCompare(b.name))
  }

  async doStat(path: string): Promise<EntryInfo | undefined> {
    const target = sandboxPath(path)
    const result = await this.command(`find ${quote(target)} -maxdepth 0 -printf '%y\\t%s\\t%f\\n'`)
    if (result.code !== 0) {
      if (/No such file/.test(result.stderr)) return undefined
      throw this.failure(path, result)
    }
    return entry(target, result.stdout.toString('utf8').trim())
  }

  async doRemove(path: string): Promise<void> {
    const result = await this.command(`rm -rf -- ${quote(sandboxPath(path))}`)
    if (result.code !== 0) throw this.failure(path, result)
    this.stale = true
  }

  async doMakeDir(path: string): Promise<boolean> {
    const target = sandboxPath(path)
    const result = await this.command(
      `if [ -d ${quote(target)} ]; then echo exists; else mkdir -p -- ${quote(target)}; fi`,
    )
    if (result.code !== 0) throw this.failure(path, result)
    return !result.stdout.toString().includes('exists')
  }

  async doRename(from: string, to: string): Promise<EntryInfo> {
    const target = sandboxPath(to)
    const result = await this.command(`mv -- ${quote(sandboxPath(from))} ${quote(target)}`)
    if (result.code !== 0) throw this.failure(from, result)
    this.stale = true
    const moved = await this.doStat(target)
    if (!moved) throw new NotFoundError(`${to}: no such file in the sandbox`)
    return moved
  }

  /** Streams a host file to data/<name>, without reading it into memory. */
  async doAddData(hostPath: string, name: string): Promise<EntryInfo> {
    this.assertAlive()
    const size = dataFileSize(hostPath, name)
    const target = `${DATA}/${name}`
    await this.write(target, createReadStream(hostPath, { highWaterMark: CHUNK }), true)
    return { name, type: 'file', path: target, size }
  }

  override async doStartCommand(options: DoStartCommandOptions): Promise<CommandProcess> {
    const started = await super.doStartCommand(options)
    this.stale = true
    return started
  }

  async doKill(): Promise<void> {
    if (!(await this.closeKernel())) return
    // Terminating the container ends every process in it; the kernel needs no goodbye.
    await this.sdk.terminate().catch(() => {})
    this.sdk.detach()
  }
}

export class ModalProvider implements SandboxProvider {
  readonly specificationVersion = 'v1'
  readonly name = 'modal'
  readonly capabilities = MODAL_CAPABILITIES
  private readonly options: ModalProviderOptions
  private readonly gpu: string | undefined
  private client: Promise<ModalClient> | undefined
  private app: Promise<App> | undefined
  private image: Promise<Image> | undefined
  /** Templates' images, by template id, each built once per provider. */
  private readonly templateImages = new Map<string, Promise<Image>>()
  private told = false

  constructor(options: ModalProviderOptions = {}) {
    this.options = options
    this.gpu = options.gpu ? parseGpu(options.gpu) : undefined
  }

  /** The GPUs each sandbox gets, as Modal spells them (`A10G`, `H100:2`), if any. */
  get gpuSpec(): string | undefined {
    return this.gpu
  }

  /** The account's deployed functions, called as tools (--modal-tool), through this provider's client. */
  functions(timeoutMs?: number): ModalFunctions {
    return new ModalFunctions(() => this.sdkClient(), timeoutMs)
  }

  private sdkClient(): Promise<ModalClient> {
    this.client ??= createModalClient(this.options)
    this.client.catch(() => {
      this.client = undefined
    })
    return this.client
  }

  /** The App and the image, made once per provider (Modal caches the image's build by its definition). */
  private async appAndImage(client: ModalClient): Promise<[App, Image]> {
    this.app ??= client.apps.fromName(this.options.appName ?? 'analyst', { createIfMissing: true })
    this.image ??= this.app.then((app) => {
      const base = client.images.fromRegistry(this.options.image ?? DEFAULT_BASE_IMAGE)
      const image = this.options.image
        ? base
        : base.dockerfileCommands([
            `RUN pip install --no-cache-dir ${(this.options.packages ?? DEFAULT_PACKAGES).join(' ')}`,
          ])
      return image.build(app)
    })
    try {
      return await Promise.all([this.app, this.image])
    } catch (error) {
      this.app = undefined
      this.image = undefined
      throw error
    }
  }

  /** A template's image: its recipe's steps as Dockerfile commands, built on Modal once. */
  private async templateImage(client: ModalClient, app: App, template: BuiltTemplate): Promise<Image> {
    const known = this.templateImages.get(template.id)
    if (known) return known
    const commands = templateImageCommands(template, {
      baseImage: DEFAULT_BASE_IMAGE,
      packages: this.options.packages ?? DEFAULT_PACKAGES,
    })
    const [from, ...rest] = commands as [string, ...string[]]
    const image = client.images
      .fromRegistry(from.replace(/^FROM /, ''))
      .dockerfileCommands(rest)
      .build(app)
    this.templateImages.set(template.id, image)
    image.catch(() => this.templateImages.delete(template.id))
    return image
  }

  async doCreate(options: SandboxCreateOptions): Promise<SandboxBackend> {
    assertSupported('modal', this.capabilities, options)
    const template =
      typeof options.template === 'string'
        ? resolveTemplate(
            this.options.home ?? process.env.ANALYST_HOME ?? join(homedir(), '.analyst'),
            options.template,
          )
        : options.template
    // Said before anything is made on Modal: a template its image cannot hold.
    if (template)
      templateImageCommands(template, {
        baseImage: DEFAULT_BASE_IMAGE,
        packages: this.options.packages ?? DEFAULT_PACKAGES,
      })
    if (options.isolation === 'none') {
      throw new InvalidArgumentError("isolation 'none' does not apply to Modal: its sandboxes are containers")
    }
    options.signal?.throwIfAborted()
    const limits = resolveLimits(options.limits)
    let sdk: ModalSdkSandbox
    try {
      const client = await this.sdkClient()
      const [app, defaultImage] = await this.appAndImage(client)
      const image = template ? await this.templateImage(client, app, template) : defaultImage
      const memoryMiB = options.limits?.memoryBytes
        ? Math.ceil(options.limits.memoryBytes / 1024 ** 2)
        : undefined
      sdk = await client.sandboxes.create(app, image, {
        // Secure by default: no network unless asked for.
        blockNetwork: !(options.network ?? false),
        timeoutMs: Math.ceil((this.options.lifetimeMs ?? 3_600_000) / 1000) * 1000,
        ...(this.gpu ? { gpu: this.gpu } : {}),
        ...(memoryMiB ? { memoryMiB, memoryLimitMiB: memoryMiB } : {}),
      })
    } catch (error) {
      throw fromModal(error, 'creating a sandbox')
    }
    const interruptGraceMs = this.options.interruptGraceMs ?? 3000
    const startKernel = () =>
      ModalKernel.start(sdk, {
        python: template ? template.python.path : (this.options.python ?? 'python3'),
        // A clean environment: nothing of the host's enters (not even its CPU tuning).
        env: kernelEnv(
          SANDBOX_HOME,
          { ...template?.env, ...(this.gpu ? { ANALYST_GPU: this.gpu } : {}), ...options.envs },
          {},
        ),
        home: SANDBOX_HOME,
        config: {
          limits: {
            fileSizeBytes: limits.fileSizeBytes,
            openFiles: limits.openFiles,
            cpuSeconds: limits.cpuSeconds,
          },
          outputCap: limits.outputBytes,
          resultCap: limits.resultBytes,
          preload: ['numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot'],
          ...(template?.workdir ? { workdir: template.workdir } : {}),
          ...(template?.start ? { start: template.start } : {}),
        },
        readyTimeoutMs: this.options.readyTimeoutMs ?? 120_000,
        maxMessageBytes: 64 * 1024 * 1024,
      })
    let kernel: ModalKernel
    try {
      kernel = await startKernel()
    } catch (error) {
      await sdk.terminate().catch(() => {})
      throw fromModal(error, 'starting the kernel')
    }
    const backend = new ModalSandbox(
      sdk,
      kernel,
      startKernel,
      limits,
      interruptGraceMs,
      this.gpu,
      options.sources,
    )
    if (!this.told) {
      this.told = true
      process.emitWarning(`On Modal, ${missingCapabilities(this.capabilities).join('; ')}.`, 'AnalystWarning')
    }
    return finishCreate(backend, options)
  }
}
