/**
 * Analyst's template spec file (YAML or JSON), validated and lowered to a recipe's steps:
 *
 * ```yaml
 * name: modern
 * base: debian:trixie            # host | debian:<suite>[-slim] | template:NAME | archive:PATH | an image
 * apt: [python3-pandas]          # Debian packages
 * pip:                           # into /opt/venv (--system-site-packages: Debian's packages stay importable)
 *   packages: [polars==1.9.0]
 *   requirements: requirements.txt   # relative to the spec; with --hash lines, every one is checked
 *   index-url: https://pypi.example/simple   # else PIP_INDEX_URL of whoever builds
 * files: [{ src: lib/, dest: /opt/lib }]
 * env: { TZ: UTC }
 * run: ["python3 -m compileall /opt/lib"]
 * workdir: /home/user
 * start: import pandas as pd     # Python run once; sandboxes fork from the state it leaves
 * memory: 2G                     # each sandbox's memory and cores, unless its creator sets its own
 * cpus: 1.5
 * ```
 * Steps run in this order: env, apt, pip, files, run, workdir.
 * @module
 */
import { readFileSync } from 'node:fs'
import { basename, dirname, resolve } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { z } from 'zod'
import { InvalidArgumentError } from '../errors.js'
import { parseCpus, parseSize } from '../sandbox/kernel/limits.js'
import { parseBase } from './base.js'
import { parseContainerfile } from './containerfile.js'
import { aptCommand, type Step, type TemplateRecipe } from './steps.js'

const stringList = z.union([z.string().transform((value) => [value]), z.array(z.string())])
const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name: letters, digits and _')
const absolute = z.string().startsWith('/', 'an absolute path in the template (starting with /)')

const specSchema = z
  .object({
    name: z.string().optional(),
    base: z.string({ error: 'say what the template starts from, e.g. base: debian:trixie' }),
    apt: z
      .union([stringList, z.object({ packages: stringList, recommends: z.boolean().optional() }).strict()])
      .optional(),
    pip: z
      .union([
        stringList,
        z
          .object({
            packages: stringList.optional(),
            requirements: stringList.optional(),
            'index-url': z.string().optional(),
            'extra-index-url': stringList.optional(),
            'trusted-host': stringList.optional(),
            'find-links': stringList.optional(),
          })
          .strict(),
      ])
      .optional(),
    files: z
      .array(
        z
          .object({
            src: z.string(),
            dest: absolute,
            mode: z
              .union([z.string().regex(/^[0-7]{3,4}$/, 'an octal mode such as 0644'), z.number().int()])
              .optional(),
            user: z.string().optional(),
          })
          .strict(),
      )
      .optional(),
    env: z.record(envName, z.union([z.string(), z.number(), z.boolean()]).transform(String)).optional(),
    run: stringList.optional(),
    workdir: absolute.optional(),
    start: z.string().optional(),
    languages: z.array(z.enum(['python', 'r', 'js', 'ts', 'bash'])).optional(),
    memory: z
      .union([z.string(), z.number()])
      .transform((value, context) => {
        const bytes = parseSize(String(value))
        if (bytes === undefined) context.addIssue({ code: 'custom', message: 'a size such as 512M or 2G' })
        return bytes ?? 0
      })
      .optional(),
    cpus: z.number().positive('a number of cores such as 2 or 0.5').optional(),
  })
  .strict()

export type TemplateSpecFile = z.input<typeof specSchema>

/** Where the pip steps put requirements files they were given. */
const REQUIREMENTS_DIR = '/opt/analyst-build'

/** A spec's text (YAML, of which JSON is a part) as a recipe; `context` is the folder its paths are relative to. */
export function parseSpec(text: string, context: string, source = 'the spec'): TemplateRecipe {
  let raw: unknown
  try {
    raw = parseYaml(text)
  } catch (error) {
    throw new InvalidArgumentError(`${source} is not valid YAML or JSON: ${(error as Error).message}`, {
      cause: error,
    })
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new InvalidArgumentError(`${source} is not a template spec`, {
      hint: 'A spec is a mapping with at least base: (e.g. base: debian:trixie), and apt:, pip:, files:, env:, run:, workdir:, start: as needed.',
    })
  }
  const parsed = specSchema.safeParse(raw)
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const where = issue.path.length > 0 ? issue.path.join('.') : 'the spec'
      const message =
        issue.code === 'unrecognized_keys'
          ? `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`
          : issue.code === 'invalid_key'
            ? `${issue.issues[0]?.message ?? issue.message}`
            : issue.message
      return `${where}: ${message}`
    })
    throw new InvalidArgumentError(
      `${source} has ${lines.length === 1 ? 'a mistake' : 'mistakes'}: ${lines.join('; ')}`,
      {
        hint: 'The keys a spec takes: name, base, apt, pip, files, env, run, workdir, start, languages, memory, cpus.',
      },
    )
  }
  return lower(parsed.data, context)
}

function lower(spec: z.output<typeof specSchema>, context: string): TemplateRecipe {
  const steps: Step[] = []
  if (spec.env && Object.keys(spec.env).length > 0) steps.push({ type: 'env', vars: spec.env })
  if (spec.apt) {
    const apt = Array.isArray(spec.apt) ? { packages: spec.apt } : spec.apt
    if (apt.packages.length > 0) steps.push({ type: 'run', command: aptCommand(apt.packages, apt) })
  }
  const pip = Array.isArray(spec.pip) ? { packages: spec.pip } : spec.pip
  if (pip) {
    for (const [index, file] of (pip.requirements ?? []).entries()) {
      const dest = `${REQUIREMENTS_DIR}/requirements-${index + 1}-${basename(file)}`
      steps.push({ type: 'copy', src: file, dest })
      steps.push({ type: 'run', command: `pip install -r ${dest}` })
    }
    if (pip.packages && pip.packages.length > 0)
      steps.push({ type: 'run', command: `pip install ${pip.packages.map(shellQuote).join(' ')}` })
  }
  for (const file of spec.files ?? []) {
    steps.push({
      type: 'copy',
      src: file.src,
      dest: file.dest,
      ...(file.user ? { user: file.user } : {}),
      ...(file.mode !== undefined
        ? { mode: typeof file.mode === 'number' ? file.mode.toString(8) : file.mode }
        : {}),
    })
  }
  for (const command of spec.run ?? []) steps.push({ type: 'run', command })
  if (spec.workdir) steps.push({ type: 'workdir', path: spec.workdir })
  const pipConfig =
    pip && !Array.isArray(spec.pip)
      ? {
          ...(pip['index-url'] ? { indexUrl: pip['index-url'] } : {}),
          ...(pip['extra-index-url'] ? { extraIndexUrls: pip['extra-index-url'] } : {}),
          ...(pip['trusted-host'] ? { trustedHosts: pip['trusted-host'] } : {}),
          ...(pip['find-links']
            ? { findLinks: pip['find-links'].map((link) => resolveLink(link, context)) }
            : {}),
        }
      : undefined
  return {
    base: parseBase(spec.base),
    steps,
    context,
    ...(pipConfig && Object.keys(pipConfig).length > 0 ? { pip: pipConfig } : {}),
    ...(spec.start ? { start: spec.start } : {}),
    ...(spec.languages ? { languages: spec.languages } : {}),
    ...(spec.name ? { name: spec.name } : {}),
    ...(spec.memory !== undefined || spec.cpus !== undefined
      ? {
          resources: {
            ...(spec.memory !== undefined ? { memoryBytes: spec.memory } : {}),
            ...(spec.cpus !== undefined ? { milliCpus: parseCpus(String(spec.cpus)) } : {}),
          },
        }
      : {}),
  }
}

/** A find-links entry: a URL as it is, a folder relative to the spec made absolute. */
function resolveLink(link: string, context: string): string {
  return /^[a-z]+:\/\//.test(link) ? link : resolve(context, link)
}

function shellQuote(word: string): string {
  return /^[A-Za-z0-9_.,:=@%+/~^-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`
}

/** True for a file named like a Containerfile (Containerfile, Dockerfile, *.Containerfile, …). */
export function isContainerfileName(path: string): boolean {
  return /(^|[./])(Containerfile|Dockerfile)([.].*)?$/i.test(basename(path))
}

/** A spec file or a Containerfile from disk, as a recipe. */
export function loadRecipe(path: string): TemplateRecipe {
  const file = resolve(path)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new InvalidArgumentError(
      `Cannot read the template spec ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`,
      {
        cause: error,
        hint: 'Give a spec file (YAML or JSON), a Containerfile, or the name of a recipe shipped with Analyst (modern, r).',
      },
    )
  }
  if (isContainerfileName(file) || /^\s*(FROM|ARG)\s/im.test(firstInstruction(text)))
    return parseContainerfile(text, dirname(file), path)
  return parseSpec(text, dirname(file), path)
}

function firstInstruction(text: string): string {
  return text.split('\n').find((line) => line.trim() && !line.trim().startsWith('#')) ?? ''
}
