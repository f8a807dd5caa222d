/**
 * The server's default metrics cost nothing while it is idle: no event-loop delay monitor (a
 * timer that woke it every 10 ms); the loop's lag and utilization are read when scraped.
 */
import perfHooks from 'node:perf_hooks'
import parsePrometheus from 'parse-prometheus-text-format'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createMetrics } from './metrics.js'

afterEach(() => {
  vi.restoreAllMocks()
})

describe('default metrics', () => {
  it("start no event-loop delay monitor, and show the loop's lag and utilization when scraped", async () => {
    const monitor = vi.spyOn(perfHooks, 'monitorEventLoopDelay')
    const { registry } = createMetrics(
      () => undefined,
      () => undefined,
    )
    expect(monitor).not.toHaveBeenCalled()
    const families = new Map(parsePrometheus(await registry.metrics()).map((family) => [family.name, family]))
    const value = (name: string) => Number(families.get(name)?.metrics[0]?.value)
    expect(value('analyst_nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0)
    const utilization = value('analyst_nodejs_eventloop_utilization')
    expect(utilization).toBeGreaterThan(0)
    expect(utilization).toBeLessThanOrEqual(1)
    expect(families.has('analyst_nodejs_eventloop_lag_p99_seconds')).toBe(false)
    // The rest of prom-client's defaults are still there.
    expect(value('analyst_process_open_fds')).toBeGreaterThan(0)
    expect(families.has('analyst_nodejs_heap_size_used_bytes')).toBe(true)
  })
})
