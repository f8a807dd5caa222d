/**
 * The last step of every engine's create: the create options' data files added to the new
 * sandbox and the caller's abort checked, killing the sandbox on failure rather than leaking it.
 * @module
 */
import type { SandboxBackend, SandboxCreateOptions } from './backend.js'

/** Adds `options.data` (a host path, shown as its base name, or `{ path, name }`) under `data/`. */
export async function addCreateData(
  backend: SandboxBackend,
  options: Pick<SandboxCreateOptions, 'data' | 'signal'>,
): Promise<void> {
  for (const item of options.data ?? []) {
    const { path, name } =
      typeof item === 'string' ? { path: item, name: item.slice(item.lastIndexOf('/') + 1) } : item
    await backend.doAddData(path, name)
  }
  options.signal?.throwIfAborted()
}

/** `setUp` (if any), then the data files; a failure or an abort kills the new sandbox before it is thrown. */
export async function finishCreate<B extends SandboxBackend>(
  backend: B,
  options: Pick<SandboxCreateOptions, 'data' | 'signal'>,
  setUp?: () => Promise<void>,
): Promise<B> {
  try {
    await setUp?.()
    await addCreateData(backend, options)
  } catch (error) {
    await backend.doKill()
    throw error
  }
  return backend
}
