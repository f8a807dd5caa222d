/**
 * `buildTemplate(recipe, options)`: a recipe's base and steps made into a template in the store.
 * The id comes first (the recipe and its inputs, hashed): a template already built under it is
 * the answer, unless `force`. Otherwise the build fills a scratch folder in the store, one step at
 * a time in the build jail, and moves it into place at the end, its manifest written last: a
 * failed or cancelled build leaves nothing behind. The progress and log callbacks and the
 * AbortSignal serve every door (the CLI's progress bar, the server's build status with its logs).
 * @module
 */
import { existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { basename, join, posix, resolve } from 'node:path'
import { AnalystError, InvalidArgumentError, SandboxUnavailableError, TemplateBuildError } from '../errors.js'
import { findPython, type PythonInfo } from '../python.js'
import { localImageId, refuseRegistryImage } from './base.js'
import { CACHE_RECORD, pruneAfterBuild, templateCacheDir } from './cache.js'
import { canonicalJson, copySource, filesHash, sha256, templateId } from './identity.js'
import { archiveRoot } from './image-archive.js'
import { inspectTemplate } from './inspect.js'
import { BUILD_PATH, type BuildJailSpec, buildEnv, buildJailArgs, mergePath } from './jail.js'
import { type CommandResult, runCommand } from './process.js'
import { removeRoot } from './remove-root.js'
import { copyRoot, debianCacheEntry, debianRecipe, debianRoot, imageRoot, type RootContext } from './roots.js'
import { loadRecipe } from './spec.js'
import { fetchKind, type PipConfig, type Step, stepTitle, type TemplateRecipe, VENV } from './steps.js'
import { checkTemplateName, openTemplates, type TemplateManifest, writeManifest } from './store.js'
import type { BuiltTemplate, TemplateBase } from './types.js'

export type BuildProgress =
  /** The id is known; `steps` counts the base, each recipe step and the finish. */
  | { type: 'build-start'; id: string; steps: number }
  | { type: 'step-start'; number: number; steps: number; title: string }
  | { type: 'step-end'; number: number; steps: number; title: string; elapsedMs: number; cached: boolean }
  | { type: 'finish'; template: BuiltTemplate; cached: boolean; elapsedMs: number }

export interface BuildLogLine {
  /** The step's number (from 1), as in the progress events. */
  step: number
  stream: 'stdout' | 'stderr'
  line: string
}

export interface BuildLimits {
  /** For the whole build. @default 30 minutes */
  timeoutMs?: number
  /** For each step's processes together (a cgroup, where the host delegates one). @default 4 GiB */
  memoryBytes?: number
  /** The template's size, checked after each step. @default 16 GiB */
  diskBytes?: number
}

export interface BuildOptions {
  /** ANALYST_HOME: the store is its templates/ folder. */
  home: string
  /** The name to point at the template (else the recipe's own name, if it has one). */
  name?: string
  /** Build again even when a template with the same id is there. */
  force?: boolean
  signal?: AbortSignal
  onProgress?: (event: BuildProgress) => void
  onLog?: (line: BuildLogLine) => void
  /** Where base roots are cached. @default ANALYST_TEMPLATE_CACHE, else ANALYST_HOME/templates/cache */
  cacheDir?: string
  /** Where PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_TRUSTED_HOST and PIP_FIND_LINKS are read when the spec has none. @default process.env */
  env?: NodeJS.ProcessEnv
  limits?: BuildLimits
}

export interface BuildResult {
  template: BuiltTemplate
  /** It was there already: nothing ran. */
  cached: boolean
  elapsedMs: number
}

const DEFAULT_LIMITS = { timeoutMs: 30 * 60_000, memoryBytes: 4 * 1024 ** 3, diskBytes: 16 * 1024 ** 3 }

/** What the base resolved to: what the id depends on, and how to make the root. */
interface ResolvedBase {
  base: TemplateBase
  identity: unknown
  /** Makes the root at `to` (or for base host: nothing). */
  make?: (to: string, context: RootContext) => Promise<{ cached: boolean }>
  /** The cache key of the base's root, for the layer cache above it. */
  cacheKey?: string
  /** The cache entry its root is kept in, if it is kept there (a Debian suite's). */
  cacheEntry?: string
  hostPython?: PythonInfo
}

/** Builds a template from a recipe, or from a spec file or Containerfile at a path. */
export async function buildTemplate(
  input: TemplateRecipe | string,
  options: BuildOptions,
): Promise<BuildResult> {
  const started = Date.now()
  const recipe = typeof input === 'string' ? loadRecipe(input) : input
  const name = options.name ?? recipe.name
  const store = openTemplates(options.home)
  if (name) checkTemplateName(name)
  checkSteps(recipe)
  const base = await resolveBase(recipe, options.home)
  // pip's settings matter (and count in the id: a wheel folder by its contents) only where pip runs.
  const pip = usesPip(recipe) ? pipConfig(recipe.pip, options.env ?? process.env) : {}
  const id = templateId({ recipe, baseIdentity: base.identity, pip })
  const total = recipe.steps.length + 2
  options.onProgress?.({ type: 'build-start', id, steps: total })

  const existing = store.get(id)
  if (existing && !options.force) {
    if (name) store.setName(name, id)
    const template = store.get(id) as BuiltTemplate
    const elapsedMs = Date.now() - started
    options.onProgress?.({ type: 'finish', template, cached: true, elapsedMs })
    return { template, cached: true, elapsedMs }
  }
  if (process.geteuid?.() !== 0) {
    throw new SandboxUnavailableError(
      'Building a template needs root (mmdebstrap and the build jail run as root)',
      {
        hint: 'Build it as root (sudo), or import one built elsewhere with analyst template import.',
      },
    )
  }

  const limits = { ...DEFAULT_LIMITS, ...options.limits }
  const deadline = started + limits.timeoutMs
  const scratch = store.scratch(`build-${id.slice(0, 12)}`)
  const cacheDir = options.cacheDir ?? templateCacheDir(options.home, options.env)
  let committed = false
  try {
    const builder = new Builder({
      recipe,
      base,
      pip,
      scratch,
      total,
      limits,
      deadline,
      cacheDir,
      options,
    })
    const manifest = await builder.run(id)
    // Which cache entries it came from: `template prune` keeps those of the templates there are.
    writeFileSync(join(scratch, CACHE_RECORD), `${JSON.stringify({ entries: builder.cacheEntries })}\n`)
    writeManifest(scratch, manifest)
    const template = store.commit(scratch, id, { replace: true })
    committed = true
    if (name) store.setName(name, id)
    const named = store.get(id) as BuiltTemplate
    const elapsedMs = Date.now() - started
    options.onProgress?.({ type: 'finish', template: named, cached: false, elapsedMs })
    // Past its bound (ANALYST_TEMPLATE_CACHE_MB), the cache loses what no template came from (after the build's end: it waits for nothing).
    void pruneAfterBuild({
      home: options.home,
      env: options.env,
      cacheDir,
      onLog: (line) => options.onLog?.({ step: total, stream: 'stderr', line }),
    })
    return { template: { ...template, names: named.names }, cached: false, elapsedMs }
  } finally {
    if (!committed) removeRoot(scratch)
  }
}

/** What a base host can take: pip and what needs no root of its own. */
function checkSteps(recipe: TemplateRecipe) {
  if (recipe.base.kind !== 'host') return
  for (const step of recipe.steps) {
    const refuse = (what: string) => {
      throw new InvalidArgumentError(`${stepTitle(step)}: ${what} over the host's Python`, {
        hint: 'A template over the host takes pip packages, env, workdir and start. For Debian packages, files or other commands, start from a Debian base (base: debian:trixie).',
      })
    }
    if (step.type === 'copy') refuse('files cannot be copied in')
    if (step.type === 'user') refuse('USER has no meaning')
    if (step.type === 'run' && fetchKind(step.command) !== 'pip') refuse('only pip install runs')
  }
}

async function resolveBase(recipe: TemplateRecipe, home: string): Promise<ResolvedBase> {
  const base = recipe.base
  switch (base.kind) {
    case 'host': {
      const python = await findPython()
      return {
        base: { kind: 'host' },
        identity: { kind: 'host', python: python.executable, version: python.version },
        hostPython: python,
      }
    }
    case 'debian': {
      const identity = debianRecipe(base.suite, base.slim)
      return {
        base: { kind: 'debian', suite: base.suite },
        identity,
        cacheKey: sha256(canonicalJson(identity)),
        cacheEntry: debianCacheEntry(base.suite, base.slim),
        make: async (to, context) => {
          const { root, cached } = await debianRoot(base.suite, base.slim, context)
          await copyRoot(root, to, context)
          return { cached }
        },
      }
    }
    case 'template': {
      const parent = openTemplates(home).resolve(base.name)
      if (!parent.rootfs)
        throw new InvalidArgumentError(
          `template:${base.name} is over the host's Python, with no root of its own to start from`,
          {
            hint: 'Start from base: host with the same pip packages, or from a Debian base.',
          },
        )
      const rootfs = parent.rootfs
      return {
        base: parent.base,
        identity: { kind: 'template', id: parent.id },
        cacheKey: parent.id,
        make: async (to, context) => {
          await copyRoot(rootfs, to, context)
          return { cached: true }
        },
      }
    }
    case 'image': {
      // A name that a template has here is that template (FROM a locally built base).
      const template = openTemplates(home)
        .list()
        .find((t) => t.names.includes(base.image) && t.rootfs)
      if (template) return resolveBase({ ...recipe, base: { kind: 'template', name: base.image } }, home)
      const imageId = localImageId(base.image)
      if (!imageId) refuseRegistryImage(base.image)
      return {
        base: { kind: 'oci', image: base.image },
        identity: { kind: 'image', id: imageId },
        cacheKey: imageId,
        make: async (to, context) => {
          await imageRoot(imageId, to, context)
          return { cached: false }
        },
      }
    }
    case 'archive': {
      const file = resolve(recipe.context, base.path)
      if (!existsSync(file) || !statSync(file).isFile())
        throw new InvalidArgumentError(`The image archive ${base.path} is not there`, {
          hint: 'Give the path of a file that podman save, docker save or analyst template export wrote.',
        })
      const hash = filesHash(file)
      return {
        base: { kind: 'oci', image: `archive:${file}` },
        identity: { kind: 'archive', hash },
        cacheKey: hash,
        make: async (to, context) => {
          await archiveRoot(file, to, context)
          return { cached: false }
        },
      }
    }
  }
}

/** A step runs pip. */
function usesPip(recipe: TemplateRecipe): boolean {
  return recipe.steps.some((step) => step.type === 'run' && PIP_WORD.test(step.command))
}

const PIP_WORD = /\bpip3?\b|-m pip\b/

/** pip's index settings: the spec's, else those of whoever builds. */
export function pipConfig(spec: PipConfig | undefined, env: NodeJS.ProcessEnv): PipConfig {
  const list = (value: string | undefined) => value?.split(/\s+/).filter(Boolean)
  const config: PipConfig = {
    indexUrl: spec?.indexUrl ?? (env.PIP_INDEX_URL || undefined),
    extraIndexUrls: spec?.extraIndexUrls ?? list(env.PIP_EXTRA_INDEX_URL),
    trustedHosts: spec?.trustedHosts ?? list(env.PIP_TRUSTED_HOST),
    findLinks: spec?.findLinks ?? list(env.PIP_FIND_LINKS),
  }
  return Object.fromEntries(
    Object.entries(config).filter(([, v]) => v !== undefined && (!Array.isArray(v) || v.length > 0)),
  )
}

/** One build's state as its steps run. */
class Builder {
  readonly #recipe: TemplateRecipe
  readonly #base: ResolvedBase
  readonly #pip: PipConfig
  readonly #scratch: string
  readonly #total: number
  readonly #limits: Required<BuildLimits>
  readonly #deadline: number
  readonly #cacheDir: string
  readonly #options: BuildOptions
  /** The template's variables so far (ENV steps). */
  #env: Record<string, string> = {}
  #workdir = '/'
  #user = 'root'
  #hasVenv = false
  #step = 0

  constructor(init: {
    recipe: TemplateRecipe
    base: ResolvedBase
    pip: PipConfig
    scratch: string
    total: number
    limits: Required<BuildLimits>
    deadline: number
    cacheDir: string
    options: BuildOptions
  }) {
    this.#recipe = init.recipe
    this.#base = init.base
    this.#pip = init.pip
    this.#scratch = init.scratch
    this.#total = init.total
    this.#limits = init.limits
    this.#deadline = init.deadline
    this.#cacheDir = init.cacheDir
    this.#options = init.options
  }

  get #root(): string | undefined {
    return this.#base.make ? join(this.#scratch, 'rootfs') : undefined
  }

  get #venvDir(): string {
    return join(this.#scratch, 'venv')
  }

  /** The cache entries this build started from or left (names of folders in the cache). */
  get cacheEntries(): string[] {
    const layer = this.#layerPrefix()
    return [this.#base.cacheEntry, layer && basename(layer.dir)].filter((entry): entry is string => !!entry)
  }

  async run(id: string): Promise<TemplateManifest> {
    const steps = this.#recipe.steps
    const layer = this.#layerPrefix()
    let from = 0
    await this.#phase(`FROM ${describeBase(this.#recipe)}`, async () => {
      if (!this.#base.make) {
        mkdirSync(this.#venvDir)
        return true
      }
      if (layer && existsSync(join(layer.dir, 'rootfs'))) {
        await copyRoot(join(layer.dir, 'rootfs'), this.#root as string, this.#rootContext())
        from = layer.length
        return true
      }
      const { cached } = await this.#base.make(this.#root as string, this.#rootContext())
      return cached
    })
    for (const [index, step] of steps.entries()) {
      if (index < from) {
        // In the cached layer already: only what it says to later steps is kept.
        this.#apply(step)
        this.#step += 1
        this.#emit({
          type: 'step-end',
          number: this.#step,
          steps: this.#total,
          title: stepTitle(step),
          elapsedMs: 0,
          cached: true,
        })
        continue
      }
      await this.#phase(stepTitle(step), async () => {
        await this.#runStep(step)
        return false
      })
      if (layer && index + 1 === layer.length && from === 0) await this.#saveLayer(layer.dir)
    }
    let manifest: TemplateManifest | undefined
    await this.#phase('finish: versions and size', async () => {
      manifest = await this.#finish(id)
      return false
    })
    return manifest as TemplateManifest
  }

  /** The leading apt steps (and ENVs among them) with later steps after them: cached as a layer of their own. */
  #layerPrefix(): { dir: string; length: number } | undefined {
    if (!this.#base.cacheKey) return undefined
    const steps = this.#recipe.steps
    let length = 0
    while (length < steps.length) {
      const step = steps[length] as Step
      if (step.type === 'env' || (step.type === 'run' && fetchKind(step.command) === 'apt')) length += 1
      else break
    }
    const hasApt = steps.slice(0, length).some((step) => step.type === 'run')
    if (!hasApt || length === steps.length) return undefined
    const key = sha256(canonicalJson({ base: this.#base.cacheKey, steps: steps.slice(0, length) }))
    return { dir: join(this.#cacheDir, `layer-${key.slice(0, 24)}`), length }
  }

  async #saveLayer(dir: string) {
    const partial = `${dir}.partial-${process.pid}`
    try {
      mkdirSync(partial, { recursive: true })
      await copyRoot(this.#root as string, join(partial, 'rootfs'), this.#rootContext())
      renameSync(partial, dir)
    } catch {
      // a cache that could not be kept costs the next build time, nothing else
    } finally {
      rmSync(partial, { recursive: true, force: true })
    }
  }

  #emit(event: BuildProgress) {
    this.#options.onProgress?.(event)
  }

  /** One step with its progress events; a failure becomes a TemplateBuildError that names it. */
  async #phase(title: string, body: () => Promise<boolean>) {
    this.#step += 1
    const number = this.#step
    this.#options.signal?.throwIfAborted()
    this.#emit({ type: 'step-start', number, steps: this.#total, title })
    const started = Date.now()
    try {
      const cached = await body()
      this.#emit({
        type: 'step-end',
        number,
        steps: this.#total,
        title,
        elapsedMs: Date.now() - started,
        cached,
      })
    } catch (error) {
      if (this.#options.signal?.aborted)
        throw new TemplateBuildError(`The build was cancelled at step ${number}/${this.#total} (${title})`, {
          step: { number, title },
          cause: error,
        })
      if (TemplateBuildError.isInstance(error) && !error.step)
        throw new TemplateBuildError(`Step ${number}/${this.#total} (${title}) failed: ${error.message}`, {
          step: { number, title },
          log: error.log,
          hint: error.hint,
          cause: error,
        })
      if (AnalystError.isInstance(error) && !TemplateBuildError.isInstance(error)) {
        throw new TemplateBuildError(`Step ${number}/${this.#total} (${title}) failed: ${error.message}`, {
          step: { number, title },
          hint: error.hint,
          cause: error,
        })
      }
      throw error
    }
  }

  #rootContext(): RootContext {
    return {
      cacheDir: this.#cacheDir,
      limits: { timeoutMs: this.#remaining() },
      signal: this.#options.signal,
      onLog: (line) => this.#options.onLog?.({ step: this.#step, stream: 'stderr', line }),
    }
  }

  #remaining(): number {
    const left = this.#deadline - Date.now()
    if (left <= 0)
      throw new TemplateBuildError(
        `the build ran past its time limit (${Math.round(this.#limits.timeoutMs / 60_000)} min)`,
      )
    return left
  }

  /** What a step says to the steps after it (and to the manifest), without running anything. */
  #apply(step: Step) {
    if (step.type === 'env') {
      for (const [name, value] of Object.entries(step.vars))
        this.#env[name] = value.replace(
          /\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g,
          (_, ref: string) => this.#env[ref] ?? (ref === 'PATH' ? BUILD_PATH : ''),
        )
    } else if (step.type === 'workdir') this.#workdir = posix.resolve(this.#workdir, step.path)
    else if (step.type === 'user') this.#user = step.name
  }

  async #runStep(step: Step) {
    switch (step.type) {
      case 'env':
        this.#apply(step)
        return
      case 'workdir':
        this.#apply(step)
        // Owned by the current USER when it makes it, as BuildKit does: the steps after can write there.
        if (this.#root) {
          const owner =
            this.#user === 'root' || this.#user === '0'
              ? ''
              : this.#user.includes(':')
                ? this.#user
                : `${this.#user}:`
          const script = 'if [ ! -d "$1" ]; then mkdir -p "$1"; if [ -n "$2" ]; then chown "$2" "$1"; fi; fi'
          const result = await this.#jailed(['/bin/sh', '-c', script, 'workdir', this.#workdir, owner], {
            network: false,
            cwd: '/',
          })
          this.#check(result, undefined)
        }
        return
      case 'user':
        this.#apply(step)
        return
      case 'copy':
        return this.#copy(step)
      case 'run': {
        const kind = fetchKind(step.command)
        if (PIP_WORD.test(step.command)) await this.#ensureVenv()
        const user = step.user ?? this.#user
        const shell = ['/bin/sh', '-c', step.command]
        const command = user === 'root' || user === '0' || !this.#root ? shell : asUser(user, shell)
        const result = await this.#jailed(command, { network: kind !== undefined, cwd: this.#workdir, user })
        this.#check(result, kind)
        await this.#checkSize()
      }
    }
  }

  /** The venv pip layers go into, over the template's own Python with its packages kept visible. */
  async #ensureVenv() {
    if (this.#hasVenv) return
    const python = this.#root ? '/usr/bin/python3' : (this.#base.hostPython as PythonInfo).executable
    if (this.#root && !existsSync(join(this.#root, 'usr/bin/python3')))
      throw new TemplateBuildError('the base has no /usr/bin/python3 for the pip steps and the kernel', {
        hint: 'Install python3, python3-venv and python3-pip first (RUN apt-get install -y python3 python3-venv python3-pip).',
      })
    const result = await this.#jailed([python, '-m', 'venv', '--system-site-packages', VENV], {
      network: false,
      cwd: '/',
    })
    this.#check(result, undefined, 'making the venv for pip')
    this.#hasVenv = true
  }

  async #copy(step: Extract<Step, { type: 'copy' }>) {
    const source = copySource(this.#recipe.context, step.src)
    const dest = posix.resolve(this.#workdir, step.dest) + (step.dest.endsWith('/') ? '/' : '')
    // Copied inside the jail: a link in the template's root cannot send the copy out of it.
    const script = [
      'set -e',
      'S=/tmp/.analyst-copy/src; D="$1"; NAME="$2"',
      'if [ -d "$S" ]; then mkdir -p "$D"; cp -a "$S"/. "$D"/; T="$D"',
      'else case "$D" in */) mkdir -p "$D"; T="$D$NAME";; *) if [ -d "$D" ]; then T="$D/$NAME"; else mkdir -p "$(dirname "$D")"; T="$D"; fi;; esac; cp -a "$S" "$T"; fi',
      'if [ -n "$3" ]; then chown -R "$3" "$T"; fi',
      'if [ -n "$4" ]; then chmod -R "$4" "$T"; fi',
    ].join('\n')
    const result = await this.#jailed(
      [
        '/bin/sh',
        '-c',
        script,
        'copy',
        dest,
        posix.basename(step.src.replace(/\/+$/, '')),
        step.user ?? '',
        step.mode ?? '',
      ],
      { network: false, cwd: '/', binds: [{ src: source, dest: '/tmp/.analyst-copy/src' }] },
    )
    this.#check(result, undefined)
    await this.#checkSize()
  }

  async #jailed(
    command: string[],
    options: {
      network: boolean
      cwd: string
      user?: string
      binds?: BuildJailSpec['binds']
      quiet?: boolean
    },
  ): Promise<CommandResult> {
    const binds = [...(options.binds ?? [])]
    const pipEnv = this.#pipEnv(binds)
    const home =
      !options.user || options.user === 'root' || options.user === '0'
        ? '/root'
        : `/home/${options.user.split(':')[0]}`
    const spec: BuildJailSpec = {
      ...(this.#root ? { root: this.#root } : { hostVenv: this.#venvDir }),
      network: options.network,
      binds,
      env: buildEnv({
        templateEnv: this.#env,
        pipEnv,
        network: options.network,
        host: this.#options.env ?? process.env,
        home: this.#root ? home : '/tmp',
      }),
      cwd: this.#root ? options.cwd : '/tmp',
    }
    if (!this.#root) {
      for (const path of this.#base.hostPython?.paths ?? [])
        if (!path.startsWith('/usr') && existsSync(path) && !path.startsWith(this.#venvDir))
          binds.push({ src: path, dest: path })
    }
    return runCommand(['bwrap', ...buildJailArgs(spec, command)], {
      limits: { timeoutMs: this.#remaining(), memoryBytes: this.#limits.memoryBytes },
      signal: this.#options.signal,
      onLine: options.quiet
        ? undefined
        : (line, stream) => this.#options.onLog?.({ step: this.#step, stream, line }),
    })
  }

  /** PIP_* for the steps, with local wheel folders bound in read-only. */
  #pipEnv(binds: BuildJailSpec['binds']): Record<string, string> {
    const env: Record<string, string> = { PIP_NO_CACHE_DIR: '1' }
    const pip = this.#pip
    if (pip.indexUrl) env.PIP_INDEX_URL = pip.indexUrl
    if (pip.extraIndexUrls) env.PIP_EXTRA_INDEX_URL = pip.extraIndexUrls.join(' ')
    if (pip.trustedHosts) env.PIP_TRUSTED_HOST = pip.trustedHosts.join(' ')
    if (pip.findLinks) {
      env.PIP_FIND_LINKS = pip.findLinks
        .map((link, index) => {
          if (!link.startsWith('/')) return link
          const dest = `/tmp/.analyst-find-links-${index}`
          binds.push({ src: link, dest })
          return dest
        })
        .join(' ')
    }
    return env
  }

  /** A failed command as a TemplateBuildError with the reason its output gives. */
  #check(result: CommandResult, kind: 'apt' | 'pip' | undefined, what?: string) {
    if (result.code === 0) return
    const prefix = what ? `${what}: ` : ''
    if (result.aborted) throw new TemplateBuildError(`${prefix}cancelled`, { log: result.tail })
    if (result.timedOut)
      throw new TemplateBuildError(
        `${prefix}ran past the build's time limit (${Math.round(this.#limits.timeoutMs / 60_000)} min)`,
        {
          log: result.tail,
        },
      )
    if (result.outOfMemory)
      throw new TemplateBuildError(
        `${prefix}ran out of memory (the build's limit is ${Math.round(this.#limits.memoryBytes / 1024 ** 2)} MiB)`,
        {
          log: result.tail,
        },
      )
    throw new TemplateBuildError(`${prefix}${failureReason(result, kind, this.#pip)}`, { log: result.tail })
  }

  async #checkSize() {
    const bytes = await diskUsage(this.#scratch)
    if (bytes > this.#limits.diskBytes)
      throw new TemplateBuildError(
        `the template grew to ${formatBytes(bytes)}, past the build's disk limit (${formatBytes(this.#limits.diskBytes)})`,
      )
  }

  async #finish(id: string): Promise<TemplateManifest> {
    if (this.#root) {
      // What only the build needed: package lists, caches, the requirements files, the no-services rule.
      const result = await this.#jailed(
        [
          '/bin/sh',
          '-c',
          'apt-get clean >/dev/null 2>&1 || true; rm -rf /var/lib/apt/lists/* /opt/analyst-build /root/.cache',
        ],
        { network: false, cwd: '/', quiet: true },
      )
      this.#check(result, undefined, 'cleaning up')
    }
    const python = this.#hasVenv
      ? `${VENV}/bin/python`
      : this.#root
        ? '/usr/bin/python3'
        : (this.#base.hostPython as PythonInfo).executable
    const inspected = await inspectTemplate({
      python,
      run: (command) => this.#jailed(command, { network: false, cwd: '/', quiet: true }),
      root: this.#root,
    })
    const env = { ...this.#env }
    if (this.#hasVenv) {
      env.PATH = mergePath(`${VENV}/bin`, env.PATH ?? '/usr/local/bin:/usr/bin:/bin')
      env.VIRTUAL_ENV = VENV
    }
    const languages = this.#recipe.languages ?? inspected.languages
    if (!this.#hasVenv) rmSync(this.#venvDir, { recursive: true, force: true })
    const manifest: TemplateManifest = {
      id,
      base: this.#base.base,
      hasRootfs: this.#root !== undefined,
      python: { path: python, version: inspected.pythonVersion },
      languages,
      packages: inspected.packages,
      env,
      ...(this.#workdir !== '/' ? { workdir: this.#workdir } : {}),
      ...(this.#recipe.start ? { start: this.#recipe.start } : {}),
      ...(this.#recipe.resources ? { resources: this.#recipe.resources } : {}),
      sizeBytes: await diskUsage(this.#scratch),
      createdAt: new Date().toISOString(),
    }
    writeFileSync(join(this.#scratch, 'recipe.json'), `${JSON.stringify(this.#recipe, null, 2)}\n`)
    return manifest
  }
}

/** `FROM`'s words for the base step's title. */
function describeBase(recipe: TemplateRecipe): string {
  const base = recipe.base
  switch (base.kind) {
    case 'host':
      return 'host'
    case 'debian':
      return `debian:${base.suite}${base.slim ? '-slim' : ''}`
    case 'image':
      return base.image
    case 'archive':
      return `archive:${base.path}`
    case 'template':
      return `template:${base.name}`
  }
}

/** A RUN as another user: setpriv from util-linux (Essential in Debian), as root with CAP_SETUID. */
function asUser(user: string, command: string[]): string[] {
  const [uid, gid] = user.split(':') as [string, string | undefined]
  return ['setpriv', `--reuid=${uid}`, `--regid=${gid ?? uid}`, '--init-groups', ...command]
}

/** Why a step failed, from what it wrote: apt's `E:` line, pip's "no matching distribution", else its last words. */
export function failureReason(
  result: Pick<CommandResult, 'code' | 'signal' | 'tail'>,
  kind: 'apt' | 'pip' | undefined,
  pip: PipConfig,
): string {
  const lines = result.tail.map((line) => line.trim()).filter(Boolean)
  const missing = lines
    .map((line) => /No matching distribution found for (.+)$/.exec(line)?.[1])
    .find(Boolean)
  if (missing) {
    const where = [
      pip.indexUrl ?? 'https://pypi.org/simple',
      ...(pip.extraIndexUrls ?? []),
      ...(pip.findLinks ?? []),
    ].join(', ')
    return `pip found no ${missing.trim()} in ${where}`
  }
  const aptError = lines.filter((line) => line.startsWith('E: '))
  if (aptError.length > 0)
    return (aptError.find((line) => /Unable to locate|has no installation candidate/.test(line)) ??
      aptError.at(-1)) as string
  const pipError = lines.filter((line) => line.startsWith('ERROR: '))
  if (kind === 'pip' && pipError.length > 0) return pipError.at(-1) as string
  const status = result.signal ? `killed by ${result.signal}` : `exit code ${result.code}`
  const last = lines.at(-1)
  return last ? `${last} (${status})` : status
}

async function diskUsage(path: string): Promise<number> {
  const result = await runCommand(['du', '-sb', '--one-file-system', path], {
    limits: { timeoutMs: 120_000 },
  })
  return Number(result.tail.at(-1)?.split(/\s/)[0] ?? 0)
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1)} GiB`
  if (bytes >= 1024 ** 2) return `${Math.round(bytes / 1024 ** 2)} MiB`
  return `${Math.round(bytes / 1024)} KiB`
}
