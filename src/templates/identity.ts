/**
 * A template's id: the sha256 of its canonical recipe, with each copy step's sources by the hash of
 * their contents (E2B's filesHash) and the base by what it resolves to (an image's id, a parent
 * template's id, the host Python's version). The same recipe and inputs give the same id.
 * @module
 */
import { createHash } from 'node:crypto'
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { isAbsolute, join, relative, resolve } from 'node:path'
import { InvalidArgumentError } from '../errors.js'
import type { PipConfig, Step, TemplateRecipe } from './steps.js'

/** Bumped when the builder's output for the same recipe changes. */
export const BUILDER_VERSION = 1

/** A copy source inside the context folder, as an absolute path; outside it is refused. */
export function copySource(context: string, src: string): string {
  const path = resolve(context, src)
  const inside = relative(context, path)
  if (isAbsolute(src) || inside.startsWith('..')) {
    throw new InvalidArgumentError(`COPY ${src}: the source is outside the build's folder (${context})`, {
      hint: 'Copy only files beside the spec or Containerfile, or in folders under it.',
    })
  }
  try {
    lstatSync(path)
  } catch {
    throw new InvalidArgumentError(`COPY ${src}: no such file or folder in ${context}`)
  }
  return path
}

/** The hash of a file or folder's names, modes, link targets and contents. */
export function filesHash(path: string): string {
  const hash = createHash('sha256')
  const walk = (current: string, name: string) => {
    const stat = lstatSync(current)
    hash.update(`${name}\0${stat.mode.toString(8)}\0`)
    if (stat.isSymbolicLink()) hash.update(`link\0${readlinkSync(current)}\0`)
    else if (stat.isDirectory()) {
      for (const entry of readdirSync(current).sort()) walk(join(current, entry), `${name}/${entry}`)
    } else if (stat.isFile()) hash.update(readFileSync(current)).update('\0')
  }
  walk(path, '.')
  return hash.digest('hex')
}

/** JSON with keys sorted at every level: one text per value. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

/** Each step with what it depends on beyond its own words: a copy's files by their hash. */
export function hashedSteps(recipe: TemplateRecipe): Array<Step & { filesHash?: string }> {
  return recipe.steps.map((step) =>
    step.type === 'copy' ? { ...step, filesHash: filesHash(copySource(recipe.context, step.src)) } : step,
  )
}

export interface IdentityInputs {
  recipe: TemplateRecipe
  /** What the base resolved to (an image id, a parent template id, the host Python's version). */
  baseIdentity: unknown
  /** The pip settings in force (the spec's, else the builder's environment). */
  pip: PipConfig
}

/** The template id of a recipe, with its inputs. */
export function templateId({ recipe, baseIdentity, pip }: IdentityInputs): string {
  return sha256(
    canonicalJson({
      builder: BUILDER_VERSION,
      base: baseIdentity,
      steps: hashedSteps(recipe),
      pip: {
        ...pip,
        findLinks: pip.findLinks?.map((link) =>
          link.startsWith('/') ? { link, hash: filesHash(link) } : link,
        ),
      },
      start: recipe.start,
      languages: recipe.languages,
      resources: recipe.resources,
    }),
  )
}
