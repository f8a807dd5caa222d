import pc from 'picocolors'
import { readerChecks } from '../../data/index.js'
import { engine } from '../../providers.js'
import { runChecks } from '../../sandbox/local/checks.js'
import { languageChecks } from './doctor-languages.js'
import { sourceChecks } from './doctor-sources.js'

export interface DoctorOptions {
  json: boolean
  /** The engine to check (--sandbox). @default ANALYST_SANDBOX or local */
  sandbox?: string
  /** --jupyter-kernel */
  jupyterKernel?: string
  /** --gpu and --image (the modal engine) */
  gpu?: string
  image?: string
  /** Sources to check (--data, as ask takes them): a role that can write is warned of. */
  data?: string[]
  cwd?: string
  env?: NodeJS.ProcessEnv
  stdout?: NodeJS.WritableStream
}

/** `analyst doctor`: exit 0 when everything essential is in place. */
export async function doctor(options: DoctorOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const env = options.env ?? process.env
  const chosen = engine(options.sandbox, env)
  const checks = chosen.check
    ? await chosen.check({
        env,
        jupyterKernel: options.jupyterKernel,
        gpu: options.gpu,
        image: options.image,
      })
    : await runChecks()
  // Which data formats the sandbox's pandas reads itself (Parquet without pyarrow is converted first).
  if (!chosen.check) {
    for (const reader of await readerChecks()) {
      checks.push({
        name: `reader ${reader.format}`,
        ok: reader.ok,
        detail: reader.detail,
        fix: reader.fix,
        essential: false,
      })
    }
  }
  // The other languages' kernels, which the local engine runs from the host's programs.
  if (!chosen.check) checks.push(...languageChecks())
  checks.push(...(await sourceChecks(options.data ?? [], { cwd: options.cwd ?? process.cwd(), env })))
  const healthy = checks.every((check) => check.ok || !check.essential)
  if (options.json) {
    stdout.write(`${JSON.stringify({ ok: healthy, checks }, null, 2)}\n`)
    return healthy ? 0 : 1
  }
  for (const check of checks) {
    const mark = check.ok ? pc.green('✓') : check.essential ? pc.red('✗') : pc.yellow('!')
    stdout.write(`${mark} ${check.name}: ${check.detail}\n`)
    if (!check.ok && check.fix) stdout.write(`    fix: ${check.fix}\n`)
  }
  stdout.write(healthy ? pc.green('\nAll set.\n') : pc.red('\nSome checks failed; run the fixes above.\n'))
  return healthy ? 0 : 1
}
