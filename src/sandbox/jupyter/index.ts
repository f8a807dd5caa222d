/**
 * The Jupyter engine: sandboxes as kernels on a Jupyter Server, a JupyterHub user's server or
 * Jupyter Enterprise Gateway. `import { JupyterProvider } from 'analyst/sandbox/jupyter'`.
 * @module
 */
export {
  JUPYTER_CAPABILITIES,
  JUPYTER_GATEWAY_CAPABILITIES,
  JupyterProvider,
  type JupyterProviderOptions,
} from './backend.js'
export { checkJupyter } from './check.js'
export { connect, type JupyterSettings, jupyterSettings, kernelEnvFrom, type ServerInfo } from './server.js'
