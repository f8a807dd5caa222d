/**
 * `analyst doctor`'s checks of the other languages' kernels on the host's environment (the local
 * engine without a template): R (`--language r`, R contexts) needs Rscript and the packages its
 * kernel uses (jsonlite, repr; IRkernel brings them); JavaScript and TypeScript contexts need
 * node on the sandbox's PATH (/usr/local/bin, /usr/bin, /bin: not a node only the user's shell
 * finds). None is essential: Python works without them. A failure says the apt command.
 * @module
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { installHint, type PackageSystem, systemPackages } from '../../packages.js'
import type { Check } from '../../sandbox/capabilities.js'

/** The folders a sandbox's PATH holds: a program elsewhere is not there for its kernels. */
const SANDBOX_PATH = ['/usr/local/bin', '/usr/bin', '/bin']

/** R packages: what the kernel cannot run without, then what analyses reach for (the prompt names them). */
const R_PACKAGES: ReadonlyArray<{ name: string; apt: string; kernel: boolean }> = [
  { name: 'jsonlite', apt: 'r-cran-jsonlite', kernel: true },
  { name: 'repr', apt: 'r-cran-repr', kernel: true },
  { name: 'IRkernel', apt: 'r-cran-irkernel', kernel: false },
  { name: 'ggplot2', apt: 'r-cran-ggplot2', kernel: false },
  { name: 'data.table', apt: 'r-cran-data.table', kernel: false },
  { name: 'readr', apt: 'r-cran-readr', kernel: false },
]

/** The first of the sandbox's PATH folders that holds `program`. */
export function onSandboxPath(program: string, path: readonly string[] = SANDBOX_PATH): string | undefined {
  return path.map((dir) => join(dir, program)).find((file) => existsSync(file))
}

/** Which of `names` R cannot load (one Rscript run for them all); undefined when R does not run. */
function missingRPackages(rscript: string, names: readonly string[]): string[] | undefined {
  const probe = `cat(Filter(function(p) !requireNamespace(p, quietly = TRUE), c(${names.map((n) => JSON.stringify(n)).join(', ')})), sep = "\\n")`
  const result = spawnSync(rscript, ['--no-init-file', '-e', probe], { encoding: 'utf8', timeout: 60_000 })
  if (result.status !== 0 || result.error) return undefined
  return result.stdout.split('\n').filter(Boolean)
}

export interface LanguageCheckOptions {
  /** Where programs are looked for. @default the sandbox's PATH */
  path?: readonly string[]
  system?: PackageSystem
}

export function languageChecks(options: LanguageCheckOptions = {}): Check[] {
  const system = options.system ?? systemPackages({ askApt: true })
  const checks: Check[] = []
  const rscript = onSandboxPath('Rscript', options.path)
  const rFix = (packages: string[]) =>
    `${installHint(packages, system, 'or build the r template: analyst template build r')} (for --language r and R contexts)`
  if (!rscript) {
    checks.push({
      name: 'R',
      ok: false,
      detail: 'no Rscript on the sandbox PATH: --language r and R contexts cannot run',
      fix: rFix(['r-base-core', ...R_PACKAGES.map((p) => p.apt)]),
      essential: false,
    })
  } else {
    const version = spawnSync(rscript, ['--version'], { encoding: 'utf8', timeout: 30_000 })
    const said = `${version.stdout ?? ''}${version.stderr ?? ''}`.match(/version (\d+\.\d+\.\d+)/)?.[1]
    const missing = missingRPackages(
      rscript,
      R_PACKAGES.map((p) => p.name),
    )
    checks.push({
      name: 'R',
      ok: missing !== undefined,
      detail:
        missing === undefined ? `${rscript} does not run` : `${rscript} (R ${said ?? 'version unknown'})`,
      ...(missing === undefined ? { fix: rFix(['r-base-core']) } : {}),
      essential: false,
    })
    for (const pkg of R_PACKAGES) {
      if (missing === undefined) break
      const ok = !missing.includes(pkg.name)
      checks.push({
        name: `R package ${pkg.name}`,
        ok,
        detail: ok
          ? 'loads'
          : pkg.kernel
            ? "missing: R's kernel needs it, R cannot run"
            : 'missing: analyses that use it fail',
        ...(ok ? {} : { fix: rFix([pkg.apt]) }),
        essential: false,
      })
    }
  }
  const node = onSandboxPath('node', options.path)
  const nodeVersion = node ? spawnSync(node, ['--version'], { encoding: 'utf8', timeout: 30_000 }) : undefined
  const major = Number(nodeVersion?.stdout?.match(/^v(\d+)/)?.[1] ?? 0)
  checks.push({
    name: 'node for JavaScript/TypeScript contexts',
    ok: major >= 18,
    detail: !node
      ? 'no node on the sandbox PATH (/usr/local/bin, /usr/bin, /bin): JavaScript and TypeScript contexts cannot run'
      : major >= 18
        ? `${node} (${nodeVersion?.stdout.trim()})`
        : `${node} is ${nodeVersion?.stdout.trim() || 'not runnable'}; the kernel needs Node.js 18 or newer (top-level await, ES modules)`,
    ...(major >= 18
      ? {}
      : {
          fix: `${installHint(['nodejs'], system, 'install Node.js 18 or newer in /usr/local/bin')} (for JavaScript and TypeScript contexts)`,
        }),
    essential: false,
  })
  return checks
}
