#!/usr/bin/env node
// The trim of an image's node_modules, for both recipes: npm run image (scripts/image.mjs) and
// deploy/Containerfile's build stage (`node scripts/prune-modules.mjs DIR`). A file of its own so
// that the Containerfile's npm ci layer reads this and not image.mjs, which changes more often.
import { readdirSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * What a running server never reads: sources, headers, objects, maps, browser bundles, and
 * node-gyp's makefiles and configuration, which name the folder they were built in (two builds in
 * two caches would differ there and nowhere else).
 */
const UNUSED = [
  'better-sqlite3/deps',
  'better-sqlite3/src',
  'better-sqlite3/build/Makefile',
  'better-sqlite3/build/binding.Makefile',
  'better-sqlite3/build/config.gypi',
  'better-sqlite3/build/better_sqlite3.target.mk',
  'better-sqlite3/build/test_extension.target.mk',
  'better-sqlite3/build/deps',
  'better-sqlite3/build/Release/obj',
  'better-sqlite3/build/Release/obj.target',
  'better-sqlite3/build/Release/.deps',
  'better-sqlite3/build/Release/sqlite3.a',
  'better-sqlite3/build/Release/test_extension.node',
  'node-sql-parser/umd',
  'node-sql-parser/build',
  'node-sql-parser/index.js.map',
]

export function pruneModules(dir) {
  for (const path of UNUSED) rmSync(join(dir, path), { recursive: true, force: true })
  const walk = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (/\.(map|d\.ts|d\.mts|d\.cts|md|markdown)$/i.test(entry.name) && !/^license/i.test(entry.name))
        rmSync(path)
    }
  }
  walk(dir)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!process.argv[2]) {
    process.stderr.write('usage: node scripts/prune-modules.mjs NODE_MODULES_DIR\n')
    process.exit(2)
  }
  pruneModules(resolve(process.argv[2]))
}
