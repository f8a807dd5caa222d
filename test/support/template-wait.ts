/**
 * setupFiles of the vitest projects that run in the trixie test template: each file first waits
 * for the template that template-setup.ts started building (a cold build on a loaded machine
 * takes many minutes; a cached one, a moment).
 */
import { beforeAll } from 'vitest'
import { canMakeTemplates, trixieTemplate } from './templates.js'

beforeAll(async () => {
  if (canMakeTemplates) await trixieTemplate()
}, 1_800_000)
