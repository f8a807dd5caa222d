/**
 * The modal engine's settings: credentials (MODAL_TOKEN_ID/MODAL_TOKEN_SECRET or ~/.modal.toml, as
 * Modal's own tools read them), the image, GPUs; and Modal's errors in Analyst's words.
 * @module
 */
import {
  AnalystError,
  InvalidArgumentError,
  RateLimitError,
  SandboxError,
  SandboxUnavailableError,
} from '../../errors.js'

/** The GPU types Modal offers (modal.com/docs/guide/gpu), each optionally `:count`. */
export const GPU_TYPES = [
  'T4',
  'L4',
  'A10G',
  'L40S',
  'A100',
  'A100-40GB',
  'A100-80GB',
  'H100',
  'H200',
  'B200',
]

/** `A10G`, `h100:2` → Modal's spelling; a clear error for anything else. */
export function parseGpu(value: string): string {
  const match = /^([A-Za-z0-9-]+?)(?::(\d+))?$/.exec(value.trim())
  const type = match?.[1]?.toUpperCase()
  const count = match?.[2] === undefined ? 1 : Number(match[2])
  if (!type || !GPU_TYPES.includes(type) || !Number.isInteger(count) || count < 1 || count > 8) {
    throw new InvalidArgumentError(`"${value}" is not a GPU Modal offers`, {
      hint: `TYPE is one of ${GPU_TYPES.join(', ')}; COUNT from 1 to 8.`,
      fix: { setting: 'gpu', example: 'A10G or H100:2' },
    })
  }
  return count === 1 ? type : `${type}:${count}`
}

/** What the default image installs on Python 3.11 (Debian slim). */
export const DEFAULT_PACKAGES = [
  'pandas',
  'numpy',
  'scipy',
  'matplotlib',
  'seaborn',
  'scikit-learn',
  'statsmodels',
  'openpyxl',
]
export const DEFAULT_BASE_IMAGE = 'python:3.11-slim-bookworm'

export const CREDENTIALS_HINT =
  'Set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET (create a token at modal.com/settings/tokens), or run `modal token new` to write ~/.modal.toml; or run code on another engine (local).'

/** A gRPC status code of Modal's answer (nice-grpc's ClientError), without importing nice-grpc. */
function grpcCode(error: unknown): number | undefined {
  const candidate = error as { name?: string; code?: unknown }
  return candidate?.name === 'ClientError' && typeof candidate.code === 'number' ? candidate.code : undefined
}

const UNAVAILABLE = 14
const UNAUTHENTICATED = 16
const PERMISSION_DENIED = 7
const RESOURCE_EXHAUSTED = 8
const DEADLINE_EXCEEDED = 4

/** Modal's errors (gRPC statuses through the SDK) as Analyst's, with what to do about them. */
export function fromModal(error: unknown, doing: string): Error {
  const code = grpcCode(error)
  const message = error instanceof Error ? error.message : String(error)
  if (code === UNAUTHENTICATED || code === PERMISSION_DENIED) {
    return new SandboxUnavailableError(`Modal refused the credentials while ${doing}`, {
      cause: error,
      hint: `The token may be wrong, revoked or expired. ${CREDENTIALS_HINT}`,
    })
  }
  if (/missing credentials/i.test(message)) {
    return new SandboxUnavailableError('Modal credentials are not set', {
      cause: error,
      hint: CREDENTIALS_HINT,
    })
  }
  if (code === UNAVAILABLE || code === DEADLINE_EXCEEDED) {
    return new SandboxUnavailableError(`Modal did not answer while ${doing}: ${message}`, {
      cause: error,
      hint: 'Check the network and status.modal.com, and MODAL_SERVER_URL if you set it; then try again.',
    })
  }
  if (code === RESOURCE_EXHAUSTED || /Insufficient capacity/.test(message)) {
    return new RateLimitError(`Modal has no capacity or quota left for ${doing}`, { cause: error })
  }
  if (error instanceof AnalystError) return error
  return new SandboxError(`Modal failed while ${doing}: ${message}`, { cause: error })
}

/** The engine's settings from its environment variables and the command line's flags. */
export function modalSettings(
  env: NodeJS.ProcessEnv,
  flags: { gpu?: string; image?: string } = {},
): {
  tokenId?: string
  tokenSecret?: string
  environment?: string
  image?: string
  gpu?: string
} {
  return {
    tokenId: env.MODAL_TOKEN_ID || undefined,
    tokenSecret: env.MODAL_TOKEN_SECRET || undefined,
    environment: env.MODAL_ENVIRONMENT || undefined,
    image: flags.image ?? (env.ANALYST_MODAL_IMAGE || undefined),
    gpu: flags.gpu ?? (env.ANALYST_GPU || undefined),
  }
}
