/**
 * `analyst template build|list|show|rm|export|import`: templates in ANALYST_HOME/templates. A build
 * shows a progress bar with its step, each step's log (dimmed), and at the end the template's size
 * and main package versions; Ctrl-C cancels it and leaves nothing behind. Where the replicas'
 * database is configured (ANALYST_DATABASE_URL), a build is shared with them and a removal reaches
 * them, as through serve (src/server/template-share.ts).
 * @module
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import pc from 'picocolors'
import yoctoSpinner from 'yocto-spinner'
import { withDatabaseShare } from '../../server/template-share.js'
import { analystHome } from '../../store/index.js'
import { type BuildProgress, buildTemplate, formatBytes } from '../../templates/build.js'
import { pruneTemplates } from '../../templates/cache.js'
import { exportTemplate, importTemplate } from '../../templates/oci.js'
import { recipeNames, recipePath } from '../../templates/recipes.js'
import { openTemplates } from '../../templates/store.js'
import type { BuiltTemplate } from '../../templates/types.js'
import { UsageError } from '../errors.js'

interface Common {
  env?: NodeJS.ProcessEnv
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
  cwd: string
}

export interface TemplateBuildOptions extends Common {
  /** A spec file, a Containerfile, or a shipped recipe's name. */
  spec: string
  name?: string
  force: boolean
  /** Do not print each step's log. */
  quiet: boolean
  /** A spinner and colors (a TTY). @default stderr is a TTY */
  interactive?: boolean
  signal?: AbortSignal
}

/** A path that exists, else a shipped recipe of that name. */
function specPath(spec: string, cwd: string): string {
  const path = resolve(cwd, spec)
  if (existsSync(path)) return path
  const recipe = recipePath(spec)
  if (recipe) return recipe
  throw new UsageError(
    `No spec file ${spec}, and no recipe of that name`,
    `Give a spec file (YAML or JSON) or a Containerfile, or one of the recipes: ${recipeNames().join(', ')}.`,
  )
}

function bar(done: number, total: number): string {
  const width = 20
  const filled = Math.round((done / Math.max(total, 1)) * width)
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`
}

function seconds(ms: number): string {
  return ms < 60_000
    ? `${(ms / 1000).toFixed(1)} s`
    : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`
}

/** The main packages as one line: "pandas 2.2.3, numpy 2.2.4, …". */
export function packagesLine(template: BuiltTemplate): string {
  const entries = Object.entries(template.packages)
  return entries.length > 0
    ? entries.map(([name, version]) => `${name} ${version}`).join(', ')
    : 'none of the main analysis packages'
}

/** `analyst template build SPEC --name NAME`. */
export async function templateBuild(options: TemplateBuildOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const stderr = options.stderr ?? process.stderr
  const interactive = options.interactive ?? Boolean((stderr as NodeJS.WriteStream).isTTY)
  const path = specPath(options.spec, options.cwd)
  const controller = new AbortController()
  const cancel = () => controller.abort()
  options.signal?.addEventListener('abort', cancel, { once: true })
  if (!options.signal) process.once('SIGINT', cancel)
  const spinner = interactive
    ? yoctoSpinner({ stream: stderr as NodeJS.WriteStream, handleSignals: false })
    : undefined
  let status = { number: 0, steps: 1, title: '', started: Date.now() }
  const show = () => {
    if (spinner)
      spinner.text = `${bar(status.number - 1, status.steps)} ${status.number}/${status.steps} ${status.title} · ${seconds(Date.now() - status.started)}`
  }
  const ticker = spinner ? setInterval(show, 1000) : undefined
  const onProgress = (event: BuildProgress) => {
    if (event.type === 'step-start') {
      status = { number: event.number, steps: event.steps, title: event.title, started: Date.now() }
      if (spinner) {
        show()
        spinner.start()
      } else stderr.write(pc.dim(`[${event.number}/${event.steps}] ${event.title}\n`))
    } else if (event.type === 'step-end') {
      spinner?.stop()
      const how = event.cached ? 'cached' : seconds(event.elapsedMs)
      stderr.write(`${pc.green('✓')} [${event.number}/${event.steps}] ${event.title} ${pc.dim(`(${how})`)}\n`)
    }
  }
  try {
    const result = await buildTemplate(path, {
      home: analystHome(options.env),
      ...(options.name ? { name: options.name } : {}),
      force: options.force,
      signal: controller.signal,
      env: options.env ?? process.env,
      onProgress,
      onLog: options.quiet
        ? undefined
        : ({ line }) => {
            if (spinner?.isSpinning) {
              // Above the spinner, which draws itself again on its next frame.
              spinner.clear()
              stderr.write(`${pc.dim(`│ ${line}`)}\n`)
            } else stderr.write(`${pc.dim(`│ ${line}`)}\n`)
          },
    })
    spinner?.stop()
    const { template } = result
    const name = template.names[0] ?? template.id.slice(0, 12)
    if (result.cached)
      stdout.write(
        `${name} is built already (${template.id.slice(0, 12)}): from the cache in ${seconds(result.elapsedMs)}. --force builds it again.\n`,
      )
    else stdout.write(`Built ${name} (${template.id.slice(0, 12)}) in ${seconds(result.elapsedMs)}.\n`)
    stdout.write(
      `  size ${formatBytes(template.sizeBytes)}, Python ${template.python.version} (${template.python.path})\n`,
    )
    stdout.write(`  ${packagesLine(template)}\n`)
    if (!template.names.length) stdout.write('  Name it with --name NAME to use it as --template NAME.\n')
    else await shareBuilt(template, name, options.env ?? process.env, stdout, stderr)
    return 0
  } finally {
    if (ticker) clearInterval(ticker)
    spinner?.stop()
    process.removeListener('SIGINT', cancel)
    options.signal?.removeEventListener('abort', cancel)
  }
}

/**
 * With the replicas' database configured here (ANALYST_DATABASE_URL), a build is theirs too, as a
 * build through serve is: its export goes into the database. A database that fails leaves the
 * template built here; serve shares it at its next start.
 */
async function shareBuilt(
  template: BuiltTemplate,
  name: string,
  env: NodeJS.ProcessEnv,
  stdout: NodeJS.WritableStream,
  stderr: NodeJS.WritableStream,
): Promise<void> {
  try {
    const size = await withDatabaseShare(analystHome(env), env, (share) => share.publish(template, name))
    if (size !== undefined)
      stdout.write(`  shared with the replicas over ANALYST_DATABASE_URL (${formatBytes(size)})\n`)
  } catch (error) {
    stderr.write(
      `${pc.yellow('warning')}: ${name} is built here but not shared with the replicas: ${(error as Error).message}. analyst serve shares it when it starts on this host; or run this build again once the database answers.\n`,
    )
  }
}

export interface TemplateListOptions extends Common {
  json: boolean
}

/** `analyst template list`: the templates built here, newest first. */
export async function templateList(options: TemplateListOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const templates = openTemplates(analystHome(options.env)).list()
  if (options.json) {
    stdout.write(`${JSON.stringify(templates)}\n`)
    return 0
  }
  if (templates.length === 0) {
    stdout.write(
      `No templates yet. Build one: analyst template build SPEC --name NAME, or a recipe: ${recipeNames().join(', ')}\n`,
    )
    return 0
  }
  const rows = templates.map((t) => [
    t.names.join(',') || '-',
    t.id.slice(0, 12),
    baseText(t),
    `Python ${t.python.version}`,
    formatBytes(t.sizeBytes),
    t.createdAt.slice(0, 16).replace('T', ' '),
  ])
  const header = ['NAME', 'ID', 'BASE', 'PYTHON', 'SIZE', 'BUILT']
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)))
  for (const row of [header, ...rows])
    stdout.write(
      `${row
        .map((cell, i) => cell.padEnd(widths[i] as number))
        .join('  ')
        .trimEnd()}\n`,
    )
  return 0
}

function baseText(template: BuiltTemplate): string {
  const base = template.base
  return base.kind === 'host' ? 'host' : base.kind === 'debian' ? `debian:${base.suite}` : base.image
}

export interface TemplateShowOptions extends Common {
  name: string
  json: boolean
}

/** `analyst template show NAME`. */
export async function templateShow(options: TemplateShowOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const template = openTemplates(analystHome(options.env)).resolve(options.name)
  if (options.json) {
    stdout.write(`${JSON.stringify(template, null, 2)}\n`)
    return 0
  }
  const lines = [
    `${template.names.join(', ') || '(no name)'}  ${template.id}`,
    `  base       ${baseText(template)}`,
    `  python     ${template.python.version} (${template.python.path})`,
    `  languages  ${template.languages.join(', ')}`,
    `  size       ${formatBytes(template.sizeBytes)}`,
    `  built      ${template.createdAt}`,
    `  folder     ${template.dir}`,
    ...(template.workdir ? [`  workdir    ${template.workdir}`] : []),
    ...Object.entries(template.env).map(
      ([name, value], i) => `  ${i === 0 ? 'env        ' : '           '}${name}=${value}`,
    ),
    ...(template.start
      ? [`  start      ${template.start.split('\n')[0]}${template.start.includes('\n') ? ' …' : ''}`]
      : []),
    ...(Object.keys(template.packages).length > 0
      ? [
          '  packages',
          ...Object.entries(template.packages).map(([name, version]) => `    ${name.padEnd(14)} ${version}`),
        ]
      : ['  packages   none of the main analysis packages']),
  ]
  stdout.write(`${lines.join('\n')}\n`)
  return 0
}

export interface TemplateRemoveOptions extends Common {
  names: string[]
}

/** `analyst template rm NAME…`: a name, and its template once no name is left on it. */
export async function templateRemove(options: TemplateRemoveOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const env = options.env ?? process.env
  const store = openTemplates(analystHome(env))
  const removals = options.names.map((name) => {
    const removed = store.remove(name)
    if (removed.id)
      stdout.write(`Removed ${removed.name ?? removed.id.slice(0, 12)} (${removed.id.slice(0, 12)})\n`)
    else stdout.write(`Removed the name ${removed.name}; its template keeps its other names\n`)
    return removed
  })
  // As DELETE /api/templates does on a replica: out of the database, and the replicas' copies dropped.
  try {
    const forgotten = await withDatabaseShare(analystHome(env), env, async (share) => {
      for (const removed of removals) await share.forget(removed)
      return true
    })
    if (forgotten)
      stdout.write("Removed from the replicas' database too: each drops its copy at its next use of it.\n")
    return 0
  } catch (error) {
    // Removed here already, so this command cannot take it out of the database a second time.
    const names = options.names.join(' ')
    ;(options.stderr ?? process.stderr).write(
      `${pc.yellow('warning')}: ${names} removed here but not from the replicas' database: ${(error as Error).message}. Once it answers, remove it there with DELETE /api/templates/NAME on any replica.\n`,
    )
    return 1
  }
}

export interface TemplatePruneOptions extends Common {
  /** Unnamed templates go too. */
  all: boolean
  json: boolean
}

/** `analyst template prune [--all]`: the cache entries no template came from; says the space freed. */
export async function templatePrune(options: TemplatePruneOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const result = pruneTemplates({ home: analystHome(options.env), env: options.env, all: options.all })
  if (options.json) {
    stdout.write(`${JSON.stringify(result)}\n`)
    return 0
  }
  for (const template of result.templates)
    stdout.write(
      `Removed the unnamed template ${template.id.slice(0, 12)} (${formatBytes(template.bytes)})\n`,
    )
  for (const entry of result.entries) stdout.write(`Removed ${entry.name} (${formatBytes(entry.bytes)})\n`)
  const count = result.entries.length + result.templates.length
  stdout.write(
    count === 0
      ? 'Nothing to prune: every cache entry is one a built template came from.\n'
      : `Freed ${formatBytes(result.freedBytes)}.\n`,
  )
  return 0
}

export interface TemplateExportOptions extends Common {
  name: string
  out: string
}

/** `analyst template export NAME OUT.tar`: an OCI image archive (podman load takes it). */
export async function templateExport(options: TemplateExportOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const home = analystHome(options.env)
  const template = openTemplates(home).resolve(options.name)
  const out = resolve(options.cwd, options.out)
  const { bytes } = await exportTemplate(template, out, home)
  stdout.write(`Exported ${options.name} (${template.id.slice(0, 12)}) to ${out}: ${formatBytes(bytes)}\n`)
  return 0
}

export interface TemplateImportOptions extends Common {
  file: string
  name?: string
}

/** `analyst template import FILE [--name NAME]`. */
export async function templateImport(options: TemplateImportOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const { template, existed } = await importTemplate(
    resolve(options.cwd, options.file),
    analystHome(options.env),
    options.name,
  )
  const name = template.names[0] ?? template.id.slice(0, 12)
  stdout.write(
    existed
      ? `${name} (${template.id.slice(0, 12)}) was here already\n`
      : `Imported ${name} (${template.id.slice(0, 12)}): ${formatBytes(template.sizeBytes)}, Python ${template.python.version}\n`,
  )
  return 0
}
