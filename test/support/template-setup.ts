/**
 * globalSetup of the vitest project that runs the hostile-code suite in a template: the trixie
 * test template made (or found in .cache/) once, before any test file starts, so that no case
 * waits for it within its own timeout.
 */
import { canMakeTemplates, trixieTemplate } from './templates.js'

export default async function setup() {
  if (canMakeTemplates) await trixieTemplate()
}
