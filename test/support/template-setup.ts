/**
 * globalSetup of the vitest projects that run in the trixie test template. Vitest runs every
 * project's globalSetup before any test file, so awaiting the template here would hold the whole
 * suite for its build (minutes, when it is not in .cache/ yet). It is started here and not
 * awaited: the other projects' files run meanwhile, and the template projects, which run after
 * them (sequence.groupOrder), wait for it in template-wait.ts.
 */
import { canMakeTemplates, trixieTemplate } from './templates.js'

export default function setup() {
  if (!canMakeTemplates) return
  // Its failure is reported by the files that wait for it (they try again): not an unhandled rejection here.
  const made = trixieTemplate().catch(() => undefined)
  return async () => {
    await made
  }
}
