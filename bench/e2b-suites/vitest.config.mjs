// Points the suites' relative SDK imports (../src, ../../src/errors, …) at the published packages.

import { defineConfig } from 'vitest/config'

const sdk = {
  name: 'published-sdk',
  enforce: 'pre',
  resolveId(id, importer) {
    if (!/^(\.\.\/)+src(\/.*)?$/.test(id) || !importer) return null
    const pkg = importer.includes('/ci/js/') ? '@e2b/code-interpreter' : 'e2b'
    return this.resolve(pkg, importer, { skipSelf: true })
  },
}
export default defineConfig({
  plugins: [sdk],
  test: {
    testTimeout: 60000,
    hookTimeout: 60000,
    environment: 'node',
    globals: false,
    fileParallelism: false,
  },
})
