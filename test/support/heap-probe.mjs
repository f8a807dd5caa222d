/**
 * Loaded into `analyst serve` by the soak (NODE_OPTIONS="--expose-gc --import this file"), never
 * part of the server itself. On SIGUSR2 it writes process.memoryUsage() to ANALYST_HEAP_PROBE,
 * with the heap still referenced, which a leak grows, apart from the heap V8 keeps committed (RSS),
 * which churn grows and load distorts: by default the heap as the server's own last full
 * collection left it, so that the server runs as it would without the probe; after a full
 * collection of its own when the file `${ANALYST_HEAP_PROBE}.collect` exists (the soak's baseline
 * and its end, where a figure must not depend on when V8 last collected).
 */
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { constants, PerformanceObserver } from 'node:perf_hooks'

const file = process.env.ANALYST_HEAP_PROBE
if (file && typeof globalThis.gc === 'function') {
  let count = 0
  let afterFullGc
  // Delivered a moment after each collection: close enough to what the full one left.
  new PerformanceObserver((list) => {
    if (list.getEntries().some((entry) => entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR))
      afterFullGc = process.memoryUsage().heapUsed
  }).observe({ entryTypes: ['gc'] })
  process.on('SIGUSR2', () => {
    const collect = existsSync(`${file}.collect`)
    if (collect) {
      rmSync(`${file}.collect`)
      // Twice: the first collection runs finalizers whose objects the second frees.
      globalThis.gc()
      globalThis.gc()
    }
    const usage = process.memoryUsage()
    const live = collect ? usage.heapUsed : (afterFullGc ?? usage.heapUsed)
    writeFileSync(`${file}.tmp`, JSON.stringify({ count: ++count, ...usage, live }))
    renameSync(`${file}.tmp`, file)
  })
}
