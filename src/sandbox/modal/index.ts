/**
 * The modal engine: Analyst's kernel in Modal Sandboxes (GPUs on request) through the official
 * `modal` SDK, which loads only when this subpath (`analyst/sandbox/modal`) is imported.
 * @module
 */
export { MODAL_CAPABILITIES, ModalProvider, type ModalProviderOptions } from './backend.js'
export { checkModal } from './check.js'
export {
  createModalClient,
  ModalFunctions,
  type ModalTool,
  type ModalToolSpec,
  modalTools,
  parseModalTool,
  type ToolOutcome,
  toolDescription,
  toolName,
} from './functions.js'
export { DEFAULT_BASE_IMAGE, DEFAULT_PACKAGES, GPU_TYPES, modalSettings, parseGpu } from './settings.js'
