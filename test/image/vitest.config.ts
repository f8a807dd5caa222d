import { defineConfig } from 'vitest/config'

// npm run test:image: builds the image (cached steps) and runs real containers. Not part of
// `npm test`: a cold build takes minutes, and it needs podman.
export default defineConfig({
  test: {
    include: ['test/image/**/*.test.ts'],
    pool: 'forks',
    // One file at a time: containers, the compose stack and the build share two cores.
    fileParallelism: false,
    globalSetup: ['test/image/build.ts'],
    testTimeout: 300_000,
    hookTimeout: 600_000,
    reporters: ['default'],
  },
})
