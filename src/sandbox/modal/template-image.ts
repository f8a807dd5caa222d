/**
 * A built template as a Modal image: the same recipe (its recipe.json, written by the build) as
 * Dockerfile commands Modal builds and caches by their text. Modal reaches registries, so a Debian
 * base is Docker Hub's debian:<suite>; the kernel's packages and the venv that pip steps land in
 * come first, as the build does it (src/templates). A COPY cannot be had: its files are on this
 * host, and Modal's JS SDK adds no local files to an image. That template is refused, with why.
 * @module
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { InvalidArgumentError } from '../../errors.js'
import type { Step, TemplateRecipe } from '../../templates/steps.js'
import type { BuiltTemplate } from '../../templates/types.js'

const VENV = '/opt/venv'

/** The recipe a template was built from, as its build kept it. */
function recipeOf(template: BuiltTemplate): Pick<TemplateRecipe, 'base' | 'steps'> {
  try {
    return JSON.parse(readFileSync(join(template.dir, 'recipe.json'), 'utf8'))
  } catch (cause) {
    throw new InvalidArgumentError(
      `The template ${template.names[0] ?? template.id.slice(0, 12)} keeps no recipe.json to build a Modal image from`,
      {
        cause,
        hint: 'Build it again with analyst template build, or use the local engine (--sandbox local).',
      },
    )
  }
}

const quoted = (value: string) => JSON.stringify(value)

function command(step: Step, name: string): string {
  switch (step.type) {
    case 'run':
      return step.user && step.user !== 'root'
        ? `RUN su ${step.user} -s /bin/sh -c ${quoted(step.command)}`
        : `RUN ${step.command}`
    case 'env':
      return `ENV ${Object.entries(step.vars)
        .map(([key, value]) => `${key}=${quoted(value)}`)
        .join(' ')}`
    case 'workdir':
      return `WORKDIR ${step.path}`
    case 'user':
      return `USER ${step.name}`
    case 'copy':
      throw new InvalidArgumentError(
        `The template ${name} copies files in (COPY ${step.src}), which a Modal image cannot take from this host`,
        {
          hint: 'Use a template without files on Modal (apt and pip layers, env, run), or the local engine (--sandbox local).',
        },
      )
  }
}

/** The Dockerfile commands of a template's Modal image; `defaults` is the image Analyst uses with no template. */
export function templateImageCommands(
  template: BuiltTemplate,
  defaults: { baseImage: string; packages: string[] },
): string[] {
  const name = template.names[0] ?? template.id.slice(0, 12)
  const recipe = recipeOf(template)
  const steps = recipe.steps.map((step) => command(step, name))
  const base = recipe.base
  switch (base.kind) {
    case 'host':
      // The host's Python with pip layers: Analyst's own image, then the template's pip steps.
      return [
        `FROM ${defaults.baseImage}`,
        `RUN pip install --no-cache-dir ${defaults.packages.join(' ')}`,
        `RUN python -m venv --system-site-packages ${VENV}`,
        `ENV PATH=${VENV}/bin:$PATH VIRTUAL_ENV=${VENV}`,
        ...steps,
      ]
    case 'debian':
      return [
        `FROM debian:${base.suite}${base.slim ? '-slim' : ''}`,
        'RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv python3-pip ca-certificates && rm -rf /var/lib/apt/lists/*',
        `RUN python3 -m venv --system-site-packages ${VENV}`,
        `ENV PATH=${VENV}/bin:$PATH VIRTUAL_ENV=${VENV}`,
        ...steps,
      ]
    case 'image':
      return [`FROM ${base.image}`, ...steps]
    default:
      throw new InvalidArgumentError(
        `The template ${name} starts from ${base.kind === 'template' ? `the template ${base.name}` : 'an image archive'}, which Modal cannot pull`,
        {
          hint: 'On Modal, use a template whose base is debian:<suite>, the host, or a registry image; or the local engine (--sandbox local).',
        },
      )
  }
}
