import type { SandboxLimits } from '../backend.js'
import { InvalidArgumentError } from '../errors.js'

const GiB = 1024 ** 3
const MiB = 1024 ** 2

export const DEFAULT_LIMITS: Readonly<SandboxLimits> = {
  memoryBytes: 2 * GiB,
  processes: 128,
  fileSizeBytes: GiB,
  workspaceBytes: GiB,
  cpuSeconds: 600,
  openFiles: 1024,
  outputBytes: 10 * MiB,
  resultBytes: 80 * MiB,
}

/** Defaults plus overrides, each checked to be a positive whole number. */
export function resolveLimits(overrides: Partial<SandboxLimits> = {}): SandboxLimits {
  const limits = { ...DEFAULT_LIMITS }
  for (const [key, value] of Object.entries(overrides)) {
    if (!(key in DEFAULT_LIMITS)) {
      throw new InvalidArgumentError(`Unknown limit ${key}`, {
        hint: `Known limits: ${Object.keys(DEFAULT_LIMITS).join(', ')}`,
      })
    }
    if (value === undefined) continue
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new InvalidArgumentError(`limits.${key} must be a positive whole number, not ${value}`)
    }
    limits[key as keyof SandboxLimits] = value
  }
  // Results scale with the output cap unless set on their own.
  if (overrides.resultBytes === undefined && overrides.outputBytes !== undefined)
    limits.resultBytes = 8 * limits.outputBytes
  return limits
}
