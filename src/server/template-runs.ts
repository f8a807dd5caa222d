/**
 * The builds the server's doors start, handed to the template builder (src/templates): an E2B
 * request's steps with its COPY files unpacked into a folder of their own, and a spec sent to
 * /api/templates. Both come from API clients, so neither may reach a host file: a spec from the
 * API has no files, requirements files, local find-links or archive bases (those name host paths).
 * @module
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { InvalidArgumentError } from '../errors.js'
import type { TemplateStore } from '../templates/store.js'
import type { BuiltTemplate } from '../templates/types.js'
import type { RunE2BBuild } from './e2b/templates.js'
import type { BuildReporter, RunBuild, TemplateBuildLimits } from './template-builds.js'

/** What the builder is given: a recipe (src/templates/steps.ts), with the context folder of its copies. */
export interface BuildRecipe {
  base: unknown
  steps: unknown[]
  context: string
  start?: string
  name?: string
}

/** The template builder (src/templates: buildTemplate). */
export type BuildTemplate = (
  recipe: BuildRecipe,
  options: {
    home: string
    force?: boolean
    signal?: AbortSignal
    limits?: TemplateBuildLimits
    onProgress?: (progress: { step: number; total: number; title: string }) => void
    onLog?: (line: string, step?: number) => void
  },
) => Promise<BuiltTemplate>

/** Reads a spec, as a spec file holds it, into a recipe (src/templates/spec.ts: parseSpec). */
export type ParseSpec = (text: string, context: string, source?: string) => BuildRecipe

export interface TemplateRunsOptions {
  home: string
  store: Pick<TemplateStore, 'scratch' | 'setName'>
  build: BuildTemplate
  parseSpec: ParseSpec
}

function builderOptions(
  home: string,
  context: { reporter: BuildReporter; signal: AbortSignal; limits: TemplateBuildLimits },
  force: boolean,
) {
  return {
    home,
    force,
    signal: context.signal,
    limits: context.limits,
    onProgress: ({ step, total, title }: { step: number; total: number; title: string }) =>
      context.reporter.progress(step, total, title),
    onLog: (line: string, step?: number) =>
      context.reporter.log(line, step === undefined ? {} : { step: step - 1 }),
  }
}

/** E2B's builds: each COPY's files under `<filesHash>/` of a fresh context folder. */
export function e2bRun({ home, store, build }: TemplateRunsOptions): RunE2BBuild {
  return async (request, { name, unpack, ...context }) => {
    const folder = store.scratch('e2b-context')
    try {
      for (const hash of request.files) await unpack(hash, join(folder, hash))
      const recipe: BuildRecipe = {
        base: request.base,
        steps: request.steps,
        context: folder,
        name,
        ...(request.start ? { start: request.start } : {}),
      }
      const built = await build(recipe, builderOptions(home, context, request.force))
      if (!built.names.includes(name)) store.setName(name, built.id)
      return { ...built, names: built.names.includes(name) ? built.names : [...built.names, name] }
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  }
}

/** A spec from an API client: no key that names a host path. */
export function checkApiSpec(spec: Record<string, unknown>): void {
  const refuse = (what: string) => {
    throw new InvalidArgumentError(
      `A spec sent to the API cannot have ${what}: it would name files on the server`,
      {
        hint: "Copy files in with E2B's Template builder (its COPY uploads them), or build on the server with analyst template build SPEC.",
      },
    )
  }
  if (spec.files !== undefined) refuse('files')
  const pip = spec.pip
  if (pip && typeof pip === 'object' && !Array.isArray(pip)) {
    const options = pip as Record<string, unknown>
    if (options.requirements !== undefined) refuse('pip requirements files')
    const links = options['find-links']
    const list = typeof links === 'string' ? [links] : Array.isArray(links) ? links : []
    if (list.some((link) => typeof link !== 'string' || !/^https?:\/\//.test(link)))
      refuse('pip find-links that are not http(s) URLs')
  }
  if (typeof spec.base === 'string' && /^(archive|oci-archive|docker-archive):|^[./]/.test(spec.base))
    refuse('an archive base')
}

/** /api/templates's builds: the spec as JSON, in an empty context folder. */
export function apiRun({ home, store, build, parseSpec }: TemplateRunsOptions) {
  return (name: string, spec: Record<string, unknown>, force: boolean): RunBuild => {
    checkApiSpec(spec)
    // Read now, so that a mistake is the request's 400; read again in its own folder to build.
    parseSpec(JSON.stringify(spec), '/nonexistent', `the spec of ${name}`)
    return async (context) => {
      const folder = store.scratch('api-context')
      try {
        const recipe = parseSpec(JSON.stringify(spec), folder, `the spec of ${name}`)
        const built = await build({ ...recipe, name }, builderOptions(home, context, force))
        if (!built.names.includes(name)) store.setName(name, built.id)
        return { ...built, names: built.names.includes(name) ? built.names : [...built.names, name] }
      } finally {
        rmSync(folder, { recursive: true, force: true })
      }
    }
  }
}
