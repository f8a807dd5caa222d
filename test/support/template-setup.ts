/**
 * globalSetup of the vitest projects that run in a test template (the project's
 * ANALYST_TEST_TEMPLATE, else trixie). Vitest runs every project's globalSetup before any test
 * file, so awaiting the template here would hold the whole suite for its build (minutes, when it is
 * not in .cache/ yet). It is started here and not awaited: the other projects' files run meanwhile,
 * and the template projects, which run after them (the sequencer's STARTED_LAST), wait for it in
 * template-wait.ts. The builds run one after the other, in the projects' order (templates.ts
 * holds one lock for them all): two at once would hold back the first template's files.
 */
import type { TestProject } from 'vitest/node'
import { canMakeTemplates, TRIXIE, testTemplate } from './templates.js'

export default function setup(project: TestProject) {
  if (!canMakeTemplates) return
  // Its failure is reported by the files that wait for it (they try again): not an unhandled rejection here.
  const made = testTemplate(project.config.env?.ANALYST_TEST_TEMPLATE || TRIXIE).catch(() => undefined)
  return async () => {
    await made
  }
}
