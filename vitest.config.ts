import { defineConfig } from 'vitest/config'
import { LongestFirst } from './test/support/sequencer.js'

/** Files that run sandboxes in the trixie test template (test/support/templates.ts), besides the hostile suite. */
const IN_TRIXIE = ['test/sandbox/local-template.test.ts', 'test/web/templates.test.ts']
/** Files that run sandboxes in the bullseye test template (Python 3.9), besides the hostile suite. */
const IN_BULLSEYE = ['test/sandbox/bullseye-template.test.ts']
/**
 * The projects in a test template ('template' and 'trixie', then 'bullseye') start after the
 * others' files (the sequencer's STARTED_LAST, not a group that waits for all of them to end): its
 * build, when it is not cached yet, is started by their globalSetup and goes on while the others run.
 */
/**
 * Short files (under 20 s a file in test/durations.json) that share their worker's module graph
 * (isolate: false), as the modules' own tests do: each of them paid for importing the server's
 * sources anew, over a CPU-second a file. Isolated, those under 10 s took 131 CPU-s and those of
 * 10 to 20 s 121; sharing, 83 and 89 (one run each, beside other work).
 * Not here: files that check which processes of theirs remain (the zygote, a server's pool, the
 * descriptors a sandbox holds), which a file before them in the same worker leaves running; files
 * that time a sandbox's own timeout in seconds (e2b/lifecycle); and the longer files.
 */
const SHARED_GRAPH = [
  'test/agent/http.test.ts',
  'test/agent/loop.test.ts',
  'test/cli/run.test.ts',
  'test/data/bad-input.test.ts',
  'test/data/cli.test.ts',
  'test/data/csv-cases.test.ts',
  'test/data/dabench.test.ts',
  'test/deploy/kubernetes.test.ts',
  'test/e2b/charts.test.ts',
  'test/e2b/control.test.ts',
  'test/e2b/files.test.ts',
  'test/e2b/fuzz.test.ts',
  'test/e2b/ipython.test.ts',
  'test/e2b/languages.test.ts',
  'test/e2b/metadata-helper.test.ts',
  'test/e2b/network.test.ts',
  'test/e2b/pty.test.ts',
  'test/e2b/sdk.test.ts',
  'test/e2b/templates.test.ts',
  'test/eval/cli-args.test.ts',
  'test/eval/dabench.test.ts',
  'test/eval/harness.test.ts',
  'test/eval/sources.test.ts',
  'test/guard/cli.test.ts',
  'test/integrations/ai.test.ts',
  'test/integrations/langchain.test.ts',
  'test/mcp/connection.test.ts',
  'test/sandbox/charts.test.ts',
  'test/sandbox/languages.test.ts',
  'test/sandbox/local.test.ts',
  'test/sandbox/sql.test.ts',
  'test/security/host-files.test.ts',
  'test/security/injection.test.ts',
  'test/security/kernel.test.ts',
  'test/security/network.test.ts',
  'test/security/paths.test.ts',
  'test/security/processes.test.ts',
  'test/server/auth-quotas.test.ts',
  'test/server/auth-replicas.test.ts',
  'test/server/auth.test.ts',
  'test/server/disk-full.test.ts',
  'test/server/reason-phrase.test.ts',
  'test/server/templates.test.ts',
  'test/sources/cells.test.ts',
  'test/sources/describe-servers.test.ts',
  'test/sources/describe.test.ts',
  'test/sources/duckdb.test.ts',
  'test/sources/engines.test.ts',
  'test/sources/file-rows.test.ts',
  'test/sources/jupyter-chunks.test.ts',
  'test/sources/jupyter.test.ts',
  'test/sources/mariadb.test.ts',
  'test/sources/postgres-columns.test.ts',
  'test/sources/postgres.test.ts',
  'test/sources/ranking.test.ts',
  'test/sources/sandbox.test.ts',
  'test/sources/secrets.test.ts',
  'test/sources/signin.test.ts',
  'test/sources/spec.test.ts',
  'test/sources/sqlite.test.ts',
  'test/sources/uploads.test.ts',
  'test/web/admin.test.ts',
  'test/web/chart-code.test.ts',
  'test/web/run-state.test.ts',
  'test/web/signin.test.ts',
  'test/web/sources.test.ts',
  'test/web/sse.test.ts',
  'test/web/ui.test.ts',
]
/** The run's shared PostgreSQL server (src/test/support/shared-postgres.ts), for the projects whose files take a database on it. */
const sharedPostgres = ['test/support/postgres-setup.ts']
const inTemplate = {
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
          exclude: ['test/image/**', ...IN_TRIXIE, ...IN_BULLSEYE, ...SHARED_GRAPH],
          globalSetup: sharedPostgres,
        },
      },
      {
        extends: true,
        test: { name: 'shared', include: SHARED_GRAPH, isolate: false, globalSetup: sharedPostgres },
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
          ...inTemplate,
        },
      },
      // The other files that run in the trixie template.
      {
        extends: true,
        test: { name: 'trixie', include: IN_TRIXIE, ...inTemplate },
      },
      // And in a bullseye template (Python 3.9, the oldest the kernel supports; no numpy or pandas),
      // the hostile suite with the kernel protocol's checks. Its build waits for the trixie one's.
      {
        extends: true,
        test: {
          name: 'bullseye',
          include: ['test/security/**/*.test.ts', ...IN_BULLSEYE],
          exclude: ['test/security/zygote.test.ts', 'test/security/fds.test.ts'],
          env: { ANALYST_TEST_TEMPLATE: 'test-bullseye' },
          ...inTemplate,
        },
      },
    ],
  },
})
