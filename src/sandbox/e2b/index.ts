/**
 * The e2b backend: Analyst's sandboxes on E2B's cloud through the official `@e2b/code-interpreter`
 * SDK, which loads only when this subpath (`analyst/sandbox/e2b`) is imported.
 * @module
 */
export { E2B_CAPABILITIES, E2BProvider, type E2BProviderOptions } from './backend.js'
