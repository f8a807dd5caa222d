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
  milliCpus: 0,
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

const SIZE = /^(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib|t|tb|tib)?$/i
const UNITS: Record<string, number> = { b: 1, k: 1024, m: MiB, g: GiB, t: 1024 * GiB }

/** `512M`, `2G`, `1.5GiB`, `2048MB` (powers of 1024; a bare number is bytes) → bytes; undefined if it is none. */
export function parseSize(text: string): number | undefined {
  const match = SIZE.exec(text.trim())
  if (!match) return undefined
  const unit = (match[2] ?? 'b').slice(0, 1).toLowerCase()
  const bytes = Math.round(Number(match[1]) * (UNITS[unit] ?? 1))
  return bytes > 0 ? bytes : undefined
}

/** `1.5` cores → 1500 thousandths; undefined if it is not a positive number. */
export function parseCpus(text: string): number | undefined {
  const cores = Number(text.trim())
  if (!Number.isFinite(cores) || cores <= 0 || text.trim() === '') return undefined
  return Math.max(1, Math.round(cores * 1000))
}

/**
 * A sandbox's own memory and CPU limits as a door gives them (--memory, --cpus), else from the
 * environment (ANALYST_SANDBOX_MEMORY, ANALYST_SANDBOX_CPUS); left out where neither says.
 */
export function sandboxResources(
  given: { memoryBytes?: number; milliCpus?: number } = {},
  env: NodeJS.ProcessEnv = process.env,
): Partial<Pick<SandboxLimits, 'memoryBytes' | 'milliCpus'>> {
  const limits: Partial<Pick<SandboxLimits, 'memoryBytes' | 'milliCpus'>> = {}
  const memory =
    given.memoryBytes ?? fromEnv(env, 'ANALYST_SANDBOX_MEMORY', parseSize, 'a size such as 4G or 512M')
  const cpus =
    given.milliCpus ?? fromEnv(env, 'ANALYST_SANDBOX_CPUS', parseCpus, 'a number of cores such as 2 or 0.5')
  if (memory !== undefined) limits.memoryBytes = memory
  if (cpus !== undefined) limits.milliCpus = cpus
  return limits
}

function fromEnv(
  env: NodeJS.ProcessEnv,
  name: string,
  parse: (text: string) => number | undefined,
  what: string,
): number | undefined {
  const text = env[name]?.trim()
  if (!text) return undefined
  const value = parse(text)
  if (value === undefined) throw new InvalidArgumentError(`${name} must be ${what}, not ${text}`)
  return value
}
