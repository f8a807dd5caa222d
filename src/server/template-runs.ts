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
import type { BuildLogLine, BuildOptions, BuildProgress } from '../templates/build.js'
import type { TemplateRecipe } from '../templates/steps.js'
import type { TemplateStore } from '../templates/store.js'
import type { BuiltTemplate } from '../templates/types.js'
import type { RunE2BBuild } from './e2b/templates.js'
import type { BuildReporter, RunBuild, TemplateBuildLimits } from './template-builds.js'

/** The template builder (src/templates: buildTemplate), as the doors call it. */
export type BuildTemplate = (
  recipe: TemplateRecipe,
  options: Pick<BuildOptions, 'home' | 'name' | 'force' | 'signal' | 'limits' | 'onProgress' | 'onLog'>,
) => Promise<{ template: BuiltTemplate }>

/** Reads a spec, as a spec file holds it, into a recipe (src/templates/spec.ts). */
export type ParseSpec = (text: string, context: string, source?: string) => TemplateRecipe

export interface TemplateRunsOptions {
  home: string
  store: Pick<TemplateStore, 'scratch'>
  build: BuildTemplate
  parseSpec: ParseSpec
}

function builderOptions(
  home: string,
  name: string,
  context: { reporter: BuildReporter; signal: AbortSignal; limits: TemplateBuildLimits },
  force: boolean,
): Parameters<BuildTemplate>[1] {
  const { reporter } = context
  return {
    home,
    name,
    force,
    signal: context.signal,
    limits: context.limits,
    onProgress: (event: BuildProgress) => {
      if (event.type === 'step-start') {
        reporter.progress(event.number, event.steps, event.title)
        reporter.log(`Step ${event.number}/${event.steps}: ${event.title}`, { step: event.number })
      }
      if (event.type === 'finish' && event.cached)
        reporter.log('Built before: the template comes from the store')
    },
    onLog: (line: BuildLogLine) => reporter.log(line.line, { step: line.step }),
  }
}

/** E2B's builds: each COPY's files under `<filesHash>/` of a fresh context folder. */
export function e2bRun({ home, store, build }: TemplateRunsOptions): RunE2BBuild {
  return async (request, { name, unpack, ...context }) => {
    const folder = store.scratch('e2b-context')
    try {
      for (const hash of request.files) await unpack(hash, join(folder, hash))
      const recipe: TemplateRecipe = {
        base: request.base,
        steps: request.steps,
        context: folder,
        name,
        ...(request.start ? { start: request.start } : {}),
        ...(request.resources ? { resources: request.resources } : {}),
      }
      return (await build(recipe, builderOptions(home, name, context, request.force))).template
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
        return (await build(recipe, builderOptions(home, name, context, force))).template
      } finally {
        rmSync(folder, { recursive: true, force: true })
      }
    }
  }
}
