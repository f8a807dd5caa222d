/**
 * setupFiles of the vitest projects that run in a test template (the project's
 * ANALYST_TEST_TEMPLATE, else trixie): each file first waits for the template that
 * template-setup.ts started building (a cold build on a loaded machine takes many minutes; a
 * cached one, a moment).
 */
import { beforeAll } from 'vitest'
import { canMakeTemplates, TRIXIE, testTemplate } from './templates.js'

beforeAll(async () => {
  if (canMakeTemplates) await testTemplate(process.env.ANALYST_TEST_TEMPLATE || TRIXIE)
}, 1_800_000)
