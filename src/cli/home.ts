import { createProvider } from '../providers.js'
import type { SandboxProvider } from '../sandbox/index.js'
import { analystHome, openStores, type Stores } from '../store/index.js'

/**
 * What a command's session service stands on: the stores in ANALYST_HOME and the chosen sandbox
 * engine (no warm pool: one command, one session).
 */
export async function openHome(options: {
  sandbox?: string
  env?: NodeJS.ProcessEnv
  /** The kernel of the Jupyter engine (--jupyter-kernel). */
  jupyterKernel?: string
  /** --gpu and --image (the modal engine). */
  gpu?: string
  image?: string
  /** --template: warmed for nothing here (no pool), passed to each sandbox by the session service. */
  template?: string
}): Promise<{ home: string; stores: Stores; provider: SandboxProvider }> {
  const home = analystHome(options.env)
  const stores = await openStores(home, options.env)
  const provider = await createProvider(options.sandbox, {
    env: options.env,
    poolSize: 0,
    jupyterKernel: options.jupyterKernel,
    gpu: options.gpu,
    image: options.image,
  }).catch(async (error: unknown) => {
    await stores.close()
    throw error
  })
  return { home, stores, provider }
}
