/**
 * What `analyst doctor` checks: each thing the local engine needs, whether it is there, and the
 * command that fixes it when it is not.
 * @module
 */
import { spawnSync } from 'node:child_process'
import { installHint, moduleFix, type PipProbe, probePip, systemPackages } from '../../packages.js'
import type { Check } from '../capabilities.js'
import { Sandbox } from '../sandbox.js'
import { LocalProvider } from './backend.js'
import { sandboxZygote } from './home.js'
import { canSetHostname, jailFailureFix, probeJail, usernsFix } from './probe.js'
import { EXPECTED_MODULES, findPython, MODULE_SOURCES, type PythonInfo } from './python.js'
import { isRoot } from './runtime.js'
import { forkUnsupported } from './zygote.js'

/** Whether sandboxes can be forked from a zygote here (coldStart: 'fork'), and whether they are. */
async function forkCheck(python: PythonInfo): Promise<Check> {
  const name = 'cold start from a zygote (fork)'
  const on = (process.env.ANALYST_COLD_START ?? 'fork') === 'fork'
  const unsupported = forkUnsupported()
  if (unsupported) {
    return {
      name,
      ok: false,
      detail: `unavailable: ${unsupported}; sandboxes start their own bubblewrap and Python`,
      essential: false,
    }
  }
  try {
    await sandboxZygote(python)
    return {
      name,
      ok: true,
      detail: on
        ? 'on: new sandboxes are forked from a Python with pandas imported (ANALYST_COLD_START=spawn turns it off)'
        : 'available, off (ANALYST_COLD_START=spawn): unset it to fork new sandboxes from a Python with pandas imported',
      essential: false,
    }
  } catch (error) {
    return {
      name,
      ok: false,
      detail: `the zygote did not start (${(error as Error).message}); sandboxes start their own bubblewrap and Python`,
      essential: false,
    }
  }
}

/**
 * What bubblewrap may do here: namespaces, its own /proc (a container masks it unless told
 * otherwise), a hostname. Each failure says its own fix, in a container the flag it lacks.
 */
function jailChecks(): Check[] {
  const namespaces = probeJail(['--unshare-all'])
  const checks: Check[] = [
    {
      name: 'user namespaces',
      ok: namespaces.ok,
      detail: namespaces.ok ? 'bubblewrap can create a jail as an unprivileged user' : namespaces.output,
      fix: jailFailureFix(namespaces.output) ?? usernsFix(),
      essential: true,
    },
  ]
  if (!namespaces.ok) return checks
  const proc = probeJail(['--unshare-all', '--proc', '/proc'])
  checks.push({
    name: 'a /proc of its own',
    ok: proc.ok,
    detail: proc.ok ? "bubblewrap can mount the jail's /proc" : proc.output,
    fix: jailFailureFix(proc.output),
    essential: true,
  })
  const named = canSetHostname()
  checks.push({
    name: 'jail hostname',
    ok: true,
    detail: named
      ? 'jails are named "sandbox"'
      : "refused here (a seccomp profile denies sethostname, as podman's and Docker's do under --cap-drop ALL): jails keep the container's hostname, in a UTS namespace of their own",
    essential: false,
  })
  return checks
}

export type { Check } from '../capabilities.js'

const ESSENTIAL_MODULES = new Set(['pandas', 'numpy', 'matplotlib'])
const BASE_PACKAGES = ['pandas', 'matplotlib', 'numpy', 'scipy', 'openpyxl'] as const

export async function runChecks(): Promise<Check[]> {
  const checks: Check[] = []
  const system = systemPackages({ askApt: true })
  const [major] = process.versions.node.split('.').map(Number)
  checks.push({
    name: 'Node.js',
    ok: (major ?? 0) >= 20,
    detail: process.versions.node,
    fix: 'Install Node.js 20 or newer (https://nodejs.org).',
    essential: true,
  })

  let python: PythonInfo | undefined
  try {
    python = await findPython()
    checks.push({
      name: 'Python',
      ok: true,
      detail: `${python.executable} (${python.version})`,
      essential: true,
    })
  } catch (error) {
    checks.push({
      name: 'Python',
      ok: false,
      detail: (error as Error).message,
      fix: `${installHint(
        BASE_PACKAGES.map((module) => MODULE_SOURCES[module].package),
        system,
        'set ANALYST_PYTHON to a Python 3 with pandas and matplotlib',
      )} (or set ANALYST_PYTHON)`,
      essential: true,
    })
  }
  if (python) {
    // One apt-cache run for every missing module's package.
    const missing = EXPECTED_MODULES.filter((module) => python?.modules[module] !== true)
    if (system.aptLists) system.aptLookup?.(missing.map((module) => MODULE_SOURCES[module].package))
    let pip: PipProbe | undefined
    for (const module of EXPECTED_MODULES) {
      const ok = python.modules[module] === true
      if (ok) {
        checks.push({
          name: `Python module ${module}`,
          ok,
          detail: 'importable',
          essential: ESSENTIAL_MODULES.has(module),
        })
        continue
      }
      pip ??= probePip(python.executable)
      const { fix, note } = moduleFix(MODULE_SOURCES[module], system, pip)
      checks.push({
        name: `Python module ${module}`,
        ok,
        detail: note ? `missing (${note})` : 'missing',
        fix,
        essential: ESSENTIAL_MODULES.has(module),
      })
    }
  }

  const bwrap = spawnSync('bwrap', ['--version'], { encoding: 'utf8' })
  const hasBwrap = bwrap.status === 0
  checks.push({
    name: 'bubblewrap',
    ok: hasBwrap,
    detail: hasBwrap ? bwrap.stdout.trim() : 'not installed',
    fix: hasBwrap
      ? undefined
      : installHint(['bubblewrap'], system, 'Analyst needs it to jail the code it runs'),
    essential: true,
  })
  if (hasBwrap) checks.push(...jailChecks())
  checks.push({
    name: 'per-sandbox uid, cgroup and workspace quota',
    ok: isRoot,
    detail: isRoot
      ? 'running as root: each sandbox gets its own uid, memory/process cgroup and a size-limited workspace'
      : 'not root: sandboxes share your uid; memory is limited per process and the workspace size is not enforced',
    fix: 'Run Analyst as root (e.g. as a service) for per-sandbox limits.',
    essential: false,
  })

  if (python && checks.every((check) => check.ok || !check.essential)) checks.push(await forkCheck(python))

  if (checks.every((check) => check.ok || !check.essential)) {
    const started = Date.now()
    try {
      const sandbox = await Sandbox.create({ provider: new LocalProvider({ poolSize: 0 }) })
      try {
        const execution = await sandbox.runCode('import pandas, matplotlib.pyplot\n1 + 1', {
          timeoutMs: 30_000,
        })
        const ok = execution.text === '2'
        checks.push({
          name: 'sandbox',
          ok,
          detail: ok
            ? `ran a cell with pandas in ${Date.now() - started} ms`
            : (execution.error?.value ?? 'unexpected output'),
          essential: true,
        })
      } finally {
        await sandbox.kill()
      }
    } catch (error) {
      const hint = (error as { hint?: string }).hint
      checks.push({
        name: 'sandbox',
        ok: false,
        detail: (error as Error).message,
        fix: hint,
        essential: true,
      })
    }
  }
  return checks
}
