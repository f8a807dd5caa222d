/**
 * The one shape every way of describing a template lowers to (a spec file, a Containerfile, and
 * later E2B's Template builder): a base and a short list of steps of E2B's five kinds, COPY, ENV,
 * RUN, WORKDIR and USER. The builder is a function of this shape alone.
 * @module
 */
import type { TemplateResources } from './types.js'

/**
 * What a template starts from, as a recipe names it. `debian` is made from Debian's archive;
 * `image` is an OCI image already in local podman storage; `archive` an image archive (OCI or
 * docker, as `podman save` writes); `template` another template built here (E2B's fromTemplate).
 */
export type RecipeBase =
  | { kind: 'host' }
  | { kind: 'debian'; suite: string; slim: boolean }
  | { kind: 'image'; image: string }
  | { kind: 'archive'; path: string }
  | { kind: 'template'; name: string }

export type Step =
  /** Files from the build context into the template; `src` is relative to the context folder. */
  | { type: 'copy'; src: string; dest: string; user?: string; mode?: string }
  | { type: 'env'; vars: Record<string, string> }
  /** A shell command (sh -c) in the template's root; as `user` when given, else as the last USER. */
  | { type: 'run'; command: string; user?: string }
  | { type: 'workdir'; path: string }
  | { type: 'user'; name: string }

/** Where pip looks, for the pip steps: from the spec, else from the environment of whoever builds. */
export interface PipConfig {
  indexUrl?: string
  extraIndexUrls?: string[]
  trustedHosts?: string[]
  /** Folders (on the building host) or URLs of wheels. */
  findLinks?: string[]
}

export interface TemplateRecipe {
  base: RecipeBase
  steps: Step[]
  /** The folder that copy steps' sources are relative to. */
  context: string
  pip?: PipConfig
  /** Python code run once in the kernel; every sandbox forks from the state it leaves. */
  start?: string
  /** The languages its kernels speak, the first the default; undefined: found in the build. */
  languages?: Array<'python' | 'r' | 'js' | 'ts' | 'bash'>
  /** The name a spec file gives itself (the CLI's --name wins). */
  name?: string
  /** Each sandbox's default memory and CPUs, unless its creator sets its own. */
  resources?: TemplateResources
}

/** Where a template's pip layers go (in its root; for base host, <id>/venv is mounted here). */
export const VENV = '/opt/venv'

/** Debian's packages that the kernel needs in every Debian base, whatever the spec says. */
export const KERNEL_PACKAGES = ['python3', 'python3-venv', 'python3-pip']

/** apt-get as E2B's aptInstall sends it, with recommends off unless asked for. */
export function aptCommand(packages: string[], options: { recommends?: boolean } = {}): string {
  return [
    'apt-get update',
    `DEBIAN_FRONTEND=noninteractive apt-get install -y ${options.recommends ? '' : '--no-install-recommends '}${packages.join(' ')}`,
  ].join(' && ')
}

/**
 * Which package manager a RUN step fetches with, if it does nothing else: such a step (apt-get
 * update/install, pip install, each optionally behind VAR=value) is given the network; any other
 * RUN step runs without it. What E2B's aptInstall and pipInstall send qualifies.
 */
export function fetchKind(command: string): 'apt' | 'pip' | undefined {
  const parts = command
    .split(/&&|;|\n/)
    .map((part) => part.trim())
    .filter(Boolean)
  if (parts.length === 0) return undefined
  let kind: 'apt' | 'pip' | undefined
  for (const part of parts) {
    // Quoted words (a requirement such as 'polars>=1') are words, not the shell's operators.
    const plain = part.replace(/'[^']*'/g, 'x')
    if (/[|<>`$(){}"\\]/.test(plain)) return undefined
    const words = plain.split(/\s+/).filter((word) => !/^[A-Za-z_][A-Za-z0-9_]*=\S*$/.test(word))
    const [first, second] = words
    if ((first === 'apt-get' || first === 'apt') && ['update', 'install'].includes(second ?? '')) {
      kind = kind === 'pip' ? 'pip' : 'apt'
    } else if (isPipInstall(words)) kind = 'pip'
    else return undefined
  }
  return kind
}

function isPipInstall(words: string[]): boolean {
  const [first, second, third, fourth] = words
  if (first && /^(.*\/)?pip3?(\.\d+)?$/.test(first)) return second === 'install'
  if (first && /^(.*\/)?python3?(\.\d+)?$/.test(first))
    return second === '-m' && third === 'pip' && fourth === 'install'
  return false
}

/** A short title for a step, for progress and errors. */
export function stepTitle(step: Step): string {
  switch (step.type) {
    case 'copy':
      return `COPY ${step.src} ${step.dest}`
    case 'env':
      return `ENV ${Object.keys(step.vars).join(' ')}`
    case 'run': {
      // An apt step by what it installs (apt-get update and the flags say nothing).
      const command = step.command
        .replace(/^apt-get update && /, '')
        .replace(/^((?:[A-Z_]+=\S+ )+)(apt-get install)/, '$2')
        .replace(/^(apt-get install)((?: -y| --no-install-recommends)+)/, '$1')
      return `RUN ${command.length > 120 ? `${command.slice(0, 117)}...` : command}`
    }
    case 'workdir':
      return `WORKDIR ${step.path}`
    case 'user':
      return `USER ${step.name}`
  }
}
