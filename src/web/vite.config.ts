/**
 * The web UI's build: `vite build --config src/web/vite.config.ts` writes dist/web/, which
 * `analyst serve` serves at `/`. Preact through Oxc's automatic JSX runtime: no plugin needed.
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

const here = fileURLToPath(new URL('.', import.meta.url))

export default defineConfig({
  root: here,
  // Relative URLs: the UI works wherever it is mounted (a reverse proxy's sub-path too).
  base: './',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../../dist/web', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    reportCompressedSize: false,
    // Vega's chunk (charts/draw.ts, ~850 KB) is fetched with the first chart shown, not with the page.
    chunkSizeWarningLimit: 1000,
  },
})
