import { defineConfig } from 'vitest/config'
import { LongestFirst } from './test/support/sequencer.js'

/** Files that run sandboxes in the trixie test template (test/support/templates.ts), besides the hostile suite. */
const IN_TRIXIE = ['test/sandbox/local-template.test.ts', 'test/web/templates.test.ts']
/**
 * The projects in the trixie template ('template' and 'trixie') start after the others' files (the
 * sequencer's STARTED_LAST, not a group that waits for all of them to end): its build, when it is
 * not cached yet, is started by their globalSetup and goes on while the others run.
 */
/** The run's shared PostgreSQL server (src/test/support/shared-postgres.ts), for the projects whose files take a database on it. */
const sharedPostgres = ['test/support/postgres-setup.ts']
const inTrixie = {
  globalSetup: ['test/support/template-setup.ts'],
  setupFiles: ['test/support/template-wait.ts'],
}

export default defineConfig({
  test: {
    // Sandboxes are real processes: a few test files at a time on a 2-core machine. Three, not
    // two: a file spends much of its time waiting (a kernel's grace period, a lease that lapses,
    // a browser's page), and with two the cores stood idle for 39% of a whole run. Four took as
    // long as three (1,054 against 1,046 s quiet), each file slower beside the others.
    pool: 'forks',
    maxWorkers: 3,
    sequence: { sequencer: LongestFirst },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // expect.poll waits for a state (a page element, an image decoded): 1 s, the default, is too
    // short on a loaded machine. A state that holds comes as soon as it holds; the deadline is for failures.
    expect: { poll: { timeout: 30_000 } },
    reporters: ['default'],
    projects: [
      // test/image builds and runs the container image: its own config (npm run test:image).
      {
        extends: true,
        test: {
          name: 'all',
          include: ['test/**/*.test.ts'],
          exclude: ['test/image/**', ...IN_TRIXIE],
          globalSetup: sharedPostgres,
        },
      },
      // The modules' own tests share a worker's module graph: each file used to import the sources
      // anew (153 of 320 s in a run of these files, 50 with a shared graph). They restore what they
      // change in process.env, and hold no state between files.
      {
        extends: true,
        test: { name: 'unit', include: ['src/**/*.test.ts'], isolate: false, globalSetup: sharedPostgres },
      },
      // As root, sandboxes are forked from a zygote; the hostile suite also runs on the other
      // path, the one of every user who is not root and of sandboxes with network on.
      {
        extends: true,
        test: {
          name: 'spawn',
          include: ['test/security/**/*.test.ts'],
          // These two choose their path themselves.
          exclude: ['test/security/zygote.test.ts', 'test/security/fds.test.ts'],
          env: { ANALYST_COLD_START: 'spawn' },
        },
      },
      // And in a template (Debian trixie's root file system, Python 3.13: test/support/templates.ts,
      // made once and cached under .cache/), whose sandboxes are jailed in its own /usr and /etc.
      {
        extends: true,
        test: {
          name: 'template',
          include: ['test/security/**/*.test.ts'],
          exclude: ['test/security/zygote.test.ts', 'test/security/fds.test.ts'],
          env: { ANALYST_TEST_TEMPLATE: 'test-trixie' },
          ...inTrixie,
        },
      },
      // The other files that run in the trixie template.
      {
        extends: true,
        test: { name: 'trixie', include: IN_TRIXIE, ...inTrixie },
      },
    ],
  },
})
