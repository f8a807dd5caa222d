/**
 * E2B's Template builder, lowered to a recipe: the body its SDK sends to
 * `POST /v2/templates/{id}/builds/{buildId}` (`fromImage` or `fromTemplate`, then `steps` of
 * COPY, ENV, RUN, WORKDIR and USER with E2B's positional args) becomes the same steps a spec file
 * or a Containerfile makes, so the server's builder endpoints need only call `buildTemplate`.
 * COPY's files come by their `filesHash`: the server keeps each uploaded archive unpacked in
 * `<context>/<filesHash>/`, and the step copies from there.
 * @module
 */
import { posix } from 'node:path'
import { InvalidArgumentError } from '../errors.js'
import { parseBase } from './base.js'
import type { Step, TemplateRecipe } from './steps.js'

export interface E2BInstruction {
  type: string
  args: string[]
  force?: boolean
  filesHash?: string
}

export interface E2BBuildBody {
  fromImage?: string
  fromTemplate?: string
  steps?: E2BInstruction[]
  startCmd?: string
  readyCmd?: string
  force?: boolean
}

/** E2B's own template names that are Analyst's default sandbox: the host's Python. */
const HOST_TEMPLATES = new Set(['base', 'code-interpreter-v1', 'code-interpreter'])

/** The recipe of an E2B build body; `context` holds each COPY's upload under its filesHash. */
export function lowerE2BBuild(body: E2BBuildBody, context: string): TemplateRecipe & { force: boolean } {
  const base = body.fromTemplate
    ? HOST_TEMPLATES.has(body.fromTemplate)
      ? ({ kind: 'host' } as const)
      : ({ kind: 'template', name: body.fromTemplate } as const)
    : parseBase(body.fromImage ?? 'debian:stable')
  const steps: Step[] = (body.steps ?? []).map((instruction, index) =>
    lowerInstruction(instruction, index + 1),
  )
  return { base, steps, context, force: Boolean(body.force || body.steps?.some((step) => step.force)) }
}

function lowerInstruction(instruction: E2BInstruction, number: number): Step {
  const [first, second, third, fourth] = instruction.args
  const at = `step ${number} (${instruction.type})`
  switch (instruction.type) {
    case 'COPY': {
      if (!first || !second) throw new InvalidArgumentError(`${at}: COPY needs a source and a destination`)
      if (!instruction.filesHash || !/^[0-9a-f]{64}$/.test(instruction.filesHash))
        throw new InvalidArgumentError(`${at}: COPY ${first} has no filesHash of its uploaded files`)
      const src = posix.normalize(first)
      if (src.startsWith('..') || posix.isAbsolute(src))
        throw new InvalidArgumentError(`${at}: COPY ${first} is outside the template's file context`)
      return {
        type: 'copy',
        src: posix.join(instruction.filesHash, src),
        dest: second,
        ...(third ? { user: third } : {}),
        ...(fourth ? { mode: fourth } : {}),
      }
    }
    case 'ENV': {
      if (instruction.args.length % 2 !== 0)
        throw new InvalidArgumentError(`${at}: ENV takes name, value pairs`)
      const vars: Record<string, string> = {}
      for (let i = 0; i < instruction.args.length; i += 2)
        vars[instruction.args[i] as string] = instruction.args[i + 1] as string
      return { type: 'env', vars }
    }
    case 'RUN':
      if (!first) throw new InvalidArgumentError(`${at}: RUN has no command`)
      return { type: 'run', command: first, ...(second ? { user: second } : {}) }
    case 'WORKDIR':
      if (!first) throw new InvalidArgumentError(`${at}: WORKDIR has no path`)
      return { type: 'workdir', path: first }
    case 'USER':
      if (!first) throw new InvalidArgumentError(`${at}: USER has no name`)
      return { type: 'user', name: first }
    default:
      throw new InvalidArgumentError(`${at}: ${instruction.type} is not a step a template takes`, {
        hint: 'The steps are COPY, ENV, RUN, WORKDIR and USER.',
      })
  }
}
