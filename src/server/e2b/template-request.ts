/**
 * What E2B's `Template.build` sends (TemplateBuildStartV2: a base, `steps` of COPY, ENV, RUN,
 * WORKDIR and USER, a start and a ready command), checked and read into Analyst's terms: a base
 * that can be had here and the steps in order. A base that cannot be had (a registry image, with
 * no registry reachable) is refused at once, saying which bases work.
 * @module
 */
import { z } from 'zod'
import { InvalidArgumentError } from '../../errors.js'
import type { RecipeBase, Step } from '../../templates/steps.js'
import type { TemplateResources } from '../../templates/types.js'
import { TEMPLATES } from './control.js'

export const TemplateStep = z
  .object({
    type: z.string(),
    args: z.array(z.string()).default([]),
    filesHash: z.string().optional(),
    force: z.boolean().optional(),
  })
  .loose()

export const BuildStart = z
  .object({
    fromImage: z.string().optional(),
    fromTemplate: z.string().optional(),
    fromImageRegistry: z.unknown().optional(),
    startCmd: z.string().optional(),
    readyCmd: z.string().optional(),
    steps: z.array(TemplateStep).default([]),
    force: z.boolean().optional(),
  })
  .loose()

export type BuildStart = z.infer<typeof BuildStart>

export interface BuildRequest {
  base: Extract<RecipeBase, { kind: 'host' | 'debian' | 'template' }>
  /** Step i is E2B's step i + 1. A COPY's src is under the folder of its files: `<filesHash>/<src>`. */
  steps: Step[]
  /** The files hash of each COPY step, to unpack into the build's folder. */
  files: string[]
  /** Python run once in the kernel, that every sandbox forks from: the start and ready commands. */
  start?: string
  /** Rebuild every step, whatever the cache holds (E2B's skipCache). */
  force: boolean
  /** Each sandbox's default memory and cores (POST /v3/templates' memoryMB and cpuCount). */
  resources?: TemplateResources
}

/** Debian's suites that mmdebstrap builds here, and the names Docker Hub gives them. */
const SUITES: Record<string, string> = {
  bookworm: 'bookworm',
  '12': 'bookworm',
  oldstable: 'bookworm',
  trixie: 'trixie',
  '13': 'trixie',
  stable: 'trixie',
  latest: 'trixie',
}

/** The bases a client can build from here, for the refusal of one that cannot. */
export function basesThatWork(built: readonly string[] = []): string {
  const own = built.length ? `, or a template built here (${built.join(', ')})` : ''
  return `fromDebianImage('bookworm' | 'trixie' | 'stable') or fromImage('debian:<suite>' and 'debian:<suite>-slim'), made from Debian's archive; fromTemplate('${TEMPLATES[0]}') for the server's own Python${own}`
}

/** `debian:trixie-slim` (or docker.io/library/debian:12) → its suite; undefined for any other image. */
export function debianSuite(image: string): { suite: string; slim: boolean } | undefined {
  const match = image.match(/^(?:(?:docker\.io\/)?library\/)?debian(?::([\w.-]+))?$/)
  if (!match) return undefined
  const tag = match[1] ?? 'latest'
  const suite = SUITES[tag.replace(/-slim$/, '')]
  return suite ? { suite, slim: tag.endsWith('-slim') } : undefined
}

/** The request's base, or a refusal that names the bases that work. */
function baseOf(request: BuildStart, built: readonly string[]): BuildRequest['base'] {
  if (request.fromImageRegistry)
    throw new InvalidArgumentError(
      'Registry credentials (fromImageRegistry, fromAWSRegistry, fromGCPRegistry) are of no use here: this server reaches no registry.',
      { hint: `Bases that work: ${basesThatWork(built)}.` },
    )
  if (request.fromTemplate) {
    if (TEMPLATES.includes(request.fromTemplate)) return { kind: 'host' }
    const name = request.fromTemplate.replace(/:latest$/, '')
    if (built.includes(name)) return { kind: 'template', name }
    throw new InvalidArgumentError(
      `There is no template "${request.fromTemplate}" on this server to build from.`,
      {
        hint: `Bases that work: ${basesThatWork(built)}.`,
      },
    )
  }
  const image = request.fromImage ?? ''
  const debian = debianSuite(image)
  if (debian) return { kind: 'debian', ...debian }
  throw new InvalidArgumentError(
    image
      ? `The base image "${image}" cannot be had here: this server reaches no container registry.`
      : 'The build names no base (fromImage or fromTemplate).',
    { hint: `Bases that work: ${basesThatWork(built)}.` },
  )
}

const HASH = /^[0-9a-f]{64}$/

function stepOf(step: z.infer<typeof TemplateStep>, index: number): Step {
  const { type, args } = step
  const at = `step ${index + 1} (${type})`
  const need = (count: number) => {
    if (args.length < count)
      throw new InvalidArgumentError(`${at} needs ${count} arguments, not ${args.length}`)
  }
  switch (type) {
    case 'RUN':
      need(1)
      return { type: 'run', command: args[0] as string, ...(args[1] ? { user: args[1] } : {}) }
    case 'COPY': {
      need(2)
      if (!step.filesHash || !HASH.test(step.filesHash))
        throw new InvalidArgumentError(`${at} has no filesHash of its files (a sha256 in hex)`)
      const [src, dest, user, mode] = args as [string, string, string?, string?]
      if (src.startsWith('/') || src.split('/').includes('..'))
        throw new InvalidArgumentError(`${at}: the source ${src} must be a path inside the build's folder`)
      if (mode && !/^[0-7]{3,4}$/.test(mode))
        throw new InvalidArgumentError(`${at}: the mode ${mode} is not an octal file mode`)
      return {
        type: 'copy',
        src: `${step.filesHash}/${src.replace(/^\.\//, '')}`,
        dest,
        ...(user ? { user } : {}),
        ...(mode ? { mode } : {}),
      }
    }
    case 'ENV': {
      if (args.length % 2 !== 0) throw new InvalidArgumentError(`${at} needs names and values in pairs`)
      const vars: Record<string, string> = {}
      for (let i = 0; i < args.length; i += 2) vars[args[i] as string] = args[i + 1] as string
      return { type: 'env', vars }
    }
    case 'WORKDIR':
      need(1)
      return { type: 'workdir', path: args[0] as string }
    case 'USER':
      need(1)
      return { type: 'user', name: args[0] as string }
    default:
      throw new InvalidArgumentError(
        `${at}: Analyst builds COPY, ENV, RUN, WORKDIR and USER steps, not ${type}`,
      )
  }
}

/**
 * The start step: E2B's start command runs in the background, and the build waits until its ready
 * command succeeds (E2B's own order). As Python, since a template's start step runs in the kernel.
 */
export function startCode(startCmd: string | undefined, readyCmd: string | undefined): string | undefined {
  if (!startCmd && !readyCmd) return undefined
  const lines = ['import subprocess as _sp, time as _time']
  if (startCmd)
    lines.push(`_sp.Popen(['/bin/sh', '-c', ${JSON.stringify(startCmd)}], start_new_session=True)`)
  if (readyCmd) {
    lines.push(
      `_deadline = _time.monotonic() + 120`,
      `while _sp.run(['/bin/sh', '-c', ${JSON.stringify(readyCmd)}]).returncode != 0:`,
      `    if _time.monotonic() > _deadline: raise RuntimeError('the ready command did not succeed within 120 s: ' + ${JSON.stringify(readyCmd)})`,
      `    _time.sleep(0.2)`,
    )
  }
  lines.push('del _sp, _time')
  return lines.join('\n')
}

/** The request, checked; `built` are the names of the templates built here (bases too). */
export function readBuildRequest(body: unknown, built: readonly string[]): BuildRequest {
  const parsed = BuildStart.safeParse(body)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new InvalidArgumentError(`Invalid build: ${issue?.path.join('.') || 'body'}: ${issue?.message}`)
  }
  const request = parsed.data
  const base = baseOf(request, built)
  const steps = request.steps.map(stepOf)
  const start = startCode(request.startCmd, request.readyCmd)
  return {
    base,
    steps,
    files: [
      ...new Set(
        request.steps.flatMap((step) => (step.type === 'COPY' && step.filesHash ? [step.filesHash] : [])),
      ),
    ],
    ...(start ? { start } : {}),
    force: request.force === true || request.steps.some((step) => step.force === true),
  }
}
