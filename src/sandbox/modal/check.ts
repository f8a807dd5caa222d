/**
 * `analyst doctor --sandbox modal`: the credentials, Modal's answer to them, a sandbox that runs a
 * cell (and how long that takes), and what Analyst cannot promise on this engine.
 * @module
 */
import type { Check } from '../capabilities.js'
import { missingCapabilities } from '../capabilities.js'
import { Sandbox } from '../sandbox.js'
import { ModalProvider, type ModalProviderOptions } from './backend.js'

function failed(name: string, error: unknown): Check {
  const { message, hint } = error as { message?: string; hint?: string }
  return { name, ok: false, detail: message ?? String(error), fix: hint, essential: true }
}

export async function checkModal(settings: ModalProviderOptions): Promise<Check[]> {
  const checks: Check[] = []
  const provider = new ModalProvider(settings)
  const started = Date.now()
  let sandbox: Sandbox | undefined
  try {
    sandbox = await Sandbox.create({ provider })
    const createMs = Date.now() - started
    const at = performance.now()
    const execution = await sandbox.runCode(
      'import pandas, sys\nprint(sys.version.split()[0], pandas.__version__)',
    )
    const cellMs = performance.now() - at
    const [python, pandas] = execution.logs.stdout.join('').trim().split(' ')
    checks.push({
      name: 'modal sandbox',
      ok: !execution.error,
      detail: `credentials accepted; sandbox ${sandbox.sandboxId} created in ${(createMs / 1000).toFixed(1)} s${provider.gpuSpec ? ` with GPU ${provider.gpuSpec}` : ''}; Python ${python ?? '?'}, pandas ${pandas ?? '?'}; a cell took ${cellMs.toFixed(0)} ms`,
      fix: execution.error ? `${execution.error.name}: ${execution.error.value}` : undefined,
      essential: true,
    })
  } catch (error) {
    checks.push(failed('modal sandbox', error))
  } finally {
    await sandbox?.kill()
  }
  checks.push({
    name: 'isolation',
    ok: false,
    detail: `Modal's container, network blocked unless allowed: ${missingCapabilities(provider.capabilities).join('; ')}. The guard still checks code.`,
    fix: 'Nothing to fix: said so you know. Sandboxes end at their timeout (1 hour) even if Analyst does not end them.',
    essential: false,
  })
  return checks
}
