/**
 * Sandbox engines by name: what `--sandbox NAME` and ANALYST_SANDBOX choose, for every door. The
 * one module that knows every provider; each is imported only when chosen, so an engine's SDK loads
 * only for those who use it (the sandbox core never imports a backend).
 * @module
 */
import { InvalidArgumentError, SandboxUnavailableError } from './errors.js'
import type { Check } from './sandbox/capabilities.js'
import type { SandboxProvider } from './sandbox/index.js'

export interface EngineOptions {
  /** Where the engine reads its settings (API keys, URLs). @default process.env */
  env?: NodeJS.ProcessEnv
  /** Sandboxes kept started and ready, where the engine has a pool. */
  poolSize?: number
  /** The Jupyter kernel to start (--jupyter-kernel). @default ANALYST_JUPYTER_KERNEL, else python3 */
  jupyterKernel?: string
  /** GPUs for each sandbox, `TYPE[:COUNT]` (--gpu): only engines that can give them. @default ANALYST_GPU */
  gpu?: string
  /** The engine's image (--image), where it has one (modal). @default ANALYST_MODAL_IMAGE */
  image?: string
}

/** One engine: how to make its provider from settings. */
export interface Engine {
  name: string
  /** One line for help texts and `doctor`. */
  description: string
  /** It can give sandboxes GPUs (--gpu). */
  gpu?: boolean
  create(options: EngineOptions): Promise<SandboxProvider>
  /** `analyst doctor --sandbox NAME`: its settings and reachability, each with how to fix it. */
  check?(options: EngineOptions): Promise<Check[]>
}

const ENGINES: Record<string, Engine> = {
  local: {
    name: 'local',
    description: 'Python kernels in bubblewrap jails on this machine',
    async create(options) {
      const { LocalProvider } = await import('./sandbox/local/index.js')
      return new LocalProvider({
        poolSize: options.poolSize,
        home: (options.env ?? process.env).ANALYST_HOME || undefined,
      })
    },
  },
  e2b: {
    name: 'e2b',
    description: "E2B's cloud sandboxes (E2B_API_KEY), or any E2B-compatible server (E2B_API_URL)",
    async create({ env = process.env }) {
      if (!env.E2B_API_KEY) {
        throw new SandboxUnavailableError('E2B_API_KEY is not set', {
          hint: 'Get a key at e2b.dev/dashboard?tab=keys and set E2B_API_KEY.',
          fix: { setting: 'sandbox', example: 'local' },
        })
      }
      const { E2BProvider } = await import('./sandbox/e2b/index.js')
      return new E2BProvider({
        apiKey: env.E2B_API_KEY,
        apiUrl: env.E2B_API_URL,
        sandboxUrl: env.E2B_SANDBOX_URL,
      })
    },
  },
  jupyter: {
    name: 'jupyter',
    description:
      'kernels on a Jupyter Server, a JupyterHub user server or Enterprise Gateway (ANALYST_JUPYTER_URL, ANALYST_JUPYTER_TOKEN)',
    async create(options) {
      const { JupyterProvider, jupyterSettings } = await import('./sandbox/jupyter/index.js')
      return new JupyterProvider(jupyterSettings(options.env ?? process.env, options))
    },
    async check(options) {
      const { checkJupyter, jupyterSettings } = await import('./sandbox/jupyter/index.js')
      return checkJupyter(jupyterSettings(options.env ?? process.env, options))
    },
  },
  modal: {
    name: 'modal',
    description:
      'Modal Sandboxes in the cloud, GPUs on request (MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, or ~/.modal.toml)',
    gpu: true,
    async create(options) {
      const { ModalProvider, modalSettings } = await import('./sandbox/modal/index.js')
      return new ModalProvider(modalSettings(options.env ?? process.env, options))
    },
    async check(options) {
      const { checkModal, modalSettings } = await import('./sandbox/modal/index.js')
      return checkModal(modalSettings(options.env ?? process.env, options))
    },
  },
}

export const ENGINE_NAMES = Object.keys(ENGINES)

/** The engine a name (or ANALYST_SANDBOX, else `local`) chooses; a clear error for unknown names. */
export function engine(name?: string, env: NodeJS.ProcessEnv = process.env): Engine {
  const chosen = (name ?? env.ANALYST_SANDBOX ?? 'local').trim().toLowerCase() || 'local'
  const found = ENGINES[chosen]
  if (!found) {
    throw new InvalidArgumentError(`Unknown sandbox engine "${chosen}"`, {
      fix: { setting: 'sandbox' },
    })
  }
  return found
}

/** The provider of the named engine, ready to create sandboxes. */
export async function createProvider(name?: string, options: EngineOptions = {}): Promise<SandboxProvider> {
  const chosen = engine(name, options.env)
  const gpu = options.gpu ?? (options.env ?? process.env).ANALYST_GPU
  if (gpu && !chosen.gpu) {
    throw new InvalidArgumentError(`The ${chosen.name} engine cannot give a GPU (${gpu} asked for)`, {
      hint: 'Or leave the GPU out.',
      fix: { setting: 'sandbox', example: ENGINE_NAMES.filter((n) => ENGINES[n]?.gpu).join(' or ') },
    })
  }
  return chosen.create(options)
}
