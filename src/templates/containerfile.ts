/**
 * A Containerfile (Dockerfile) lowered to a recipe's steps, as E2B's SDK does in its
 * dockerfileParser: FROM is the base; RUN, COPY, ADD (local files), ENV, ARG, WORKDIR and USER
 * become steps; LABEL, EXPOSE, VOLUME, CMD, ENTRYPOINT, HEALTHCHECK and STOPSIGNAL say nothing to a
 * sandbox and are passed over. Parsed by dockerfile-ast (the parser E2B's SDK uses).
 * @module
 */
import {
  type Argument,
  DockerfileParser,
  type Instruction,
  type JSONInstruction,
  type PropertyInstruction,
} from 'dockerfile-ast'
import { InvalidArgumentError } from '../errors.js'
import { parseBase } from './base.js'
import type { Step, TemplateRecipe } from './steps.js'

/** Instructions that change nothing a sandbox sees. */
const PASSED_OVER = new Set([
  'LABEL',
  'EXPOSE',
  'VOLUME',
  'CMD',
  'ENTRYPOINT',
  'HEALTHCHECK',
  'STOPSIGNAL',
  'MAINTAINER',
])

/** What to do instead of stages: a template names another as its base by `template:NAME` (base.ts). */
const MULTI_STAGE_HINT =
  'Build the first stage as a template of its own (analyst template build first.Containerfile --name first), then start the second with FROM template:first.'

export function parseContainerfile(
  text: string,
  context: string,
  source = 'the Containerfile',
): TemplateRecipe {
  const dockerfile = DockerfileParser.parse(text)
  const froms = dockerfile.getFROMs()
  const at = (instruction: Instruction) => `${source} line ${instruction.getRange().start.line + 1}`
  if (froms.length === 0)
    throw new InvalidArgumentError(`${source} has no FROM line`, {
      hint: 'Start it with FROM debian:trixie (or another base that works here).',
    })
  if (froms.length > 1) {
    throw new InvalidArgumentError(
      `${source} has ${froms.length} FROM lines: multi-stage builds are not supported`,
      {
        hint: MULTI_STAGE_HINT,
      },
    )
  }
  const from = froms[0] as (typeof froms)[number]
  const image = from.getExpandedArguments()[0]?.getValue()
  if (!image) throw new InvalidArgumentError(`${at(from)}: FROM names no image`)
  const steps: Step[] = []
  let seenFrom = false
  for (const instruction of dockerfile.getInstructions()) {
    const keyword = instruction.getKeyword()
    if (keyword === 'FROM') {
      seenFrom = true
      continue
    }
    if (!seenFrom) continue // ARGs before FROM serve FROM only (dockerfile-ast expands them there)
    switch (keyword) {
      case 'RUN':
        steps.push({ type: 'run', command: runCommand(instruction as JSONInstruction) })
        break
      case 'COPY':
      case 'ADD':
        steps.push(...copySteps(instruction as JSONInstruction, keyword, at(instruction)))
        break
      case 'ENV':
      case 'ARG': {
        const vars: Record<string, string> = {}
        for (const property of (instruction as PropertyInstruction).getProperties()) {
          const value = property.getValue()
          // An ARG without a default has no value to set.
          if (value !== null) vars[property.getName()] = value
        }
        if (Object.keys(vars).length > 0) steps.push({ type: 'env', vars })
        break
      }
      case 'WORKDIR': {
        const path = instruction.getExpandedArguments()[0]?.getValue()
        if (!path?.startsWith('/'))
          throw new InvalidArgumentError(`${at(instruction)}: WORKDIR ${path ?? ''} is not an absolute path`)
        steps.push({ type: 'workdir', path })
        break
      }
      case 'USER': {
        const name = instruction.getExpandedArguments()[0]?.getValue()
        if (!name) throw new InvalidArgumentError(`${at(instruction)}: USER names no user`)
        steps.push({ type: 'user', name })
        break
      }
      default:
        if (PASSED_OVER.has(keyword)) break
        throw new InvalidArgumentError(`${at(instruction)}: ${keyword} is not supported in a template`, {
          hint: 'A template takes FROM, RUN, COPY, ADD (local files), ENV, ARG, WORKDIR and USER.',
        })
    }
  }
  return { base: parseBase(image), steps, context }
}

/** A RUN's command for sh -c: the shell form as written, the exec form quoted word by word. */
function runCommand(instruction: JSONInstruction): string {
  const json = instruction.getJSONStrings()
  if (json.length > 0) return json.map((word) => shQuote(word.getJSONValue())).join(' ')
  return instruction.getArgumentsContent() ?? ''
}

function copySteps(instruction: JSONInstruction, keyword: string, at: string): Step[] {
  const flags = new Map(instruction.getFlags().map((flag) => [flag.getName(), flag.getValue()]))
  if (flags.has('from'))
    throw new InvalidArgumentError(
      `${at}: ${keyword} --from needs another stage: multi-stage builds are not supported`,
      { hint: MULTI_STAGE_HINT },
    )
  const json = instruction.getJSONStrings()
  const words =
    json.length > 0
      ? json.map((word) => word.getJSONValue())
      : instruction.getExpandedArguments().map((arg: Argument) => arg.getValue())
  if (words.length < 2) throw new InvalidArgumentError(`${at}: ${keyword} needs a source and a destination`)
  const dest = words[words.length - 1] as string
  const sources = words.slice(0, -1)
  const user = flags.get('chown') ?? undefined
  const mode = flags.get('chmod') ?? undefined
  return sources.map((src) => {
    if (/^[a-z]+:\/\//.test(src))
      throw new InvalidArgumentError(`${at}: ${keyword} ${src}: a URL cannot be fetched during a build`, {
        hint: 'Download the file beside the Containerfile and ADD it from there.',
      })
    if (/[*?[]/.test(src))
      throw new InvalidArgumentError(`${at}: ${keyword} ${src}: wildcards are not supported`, {
        hint: 'Name each file or folder.',
      })
    return { type: 'copy' as const, src, dest, ...(user ? { user } : {}), ...(mode ? { mode } : {}) }
  })
}

function shQuote(word: string): string {
  return /^[A-Za-z0-9_./=:-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`
}
