/**
 * Templates: the environments sandboxes start from. The spec and its front ends (spec files,
 * Containerfiles), the build in a jail, the content-addressed store, export and import.
 * @module
 */
export {
  type BuildLimits,
  type BuildLogLine,
  type BuildOptions,
  type BuildProgress,
  type BuildResult,
  buildTemplate,
} from './build.js'
export { parseContainerfile } from './containerfile.js'
export { type E2BBuildBody, type E2BInstruction, lowerE2BBuild } from './e2b.js'
export { exportTemplate, importTemplate } from './oci.js'
export { recipeNames, recipePath } from './recipes.js'
export { loadRecipe, parseSpec } from './spec.js'
export type { PipConfig, RecipeBase, Step, TemplateRecipe } from './steps.js'
export { openTemplates, resolveTemplate, type TemplateStore, templatesRoot } from './store.js'
export type { BuiltTemplate, TemplateBase, TemplateLanguage } from './types.js'
