/**
 * The server's default metrics cost next to nothing while it is idle: the event-loop delay monitor
 * samples once a second, not every 10 ms (prom-client's default, 100 wake-ups a second).
 */
import perfHooks from 'node:perf_hooks'
import parsePrometheus from 'parse-prometheus-text-format'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createMetrics } from './metrics.js'

afterEach(() => {
  vi.restoreAllMocks()
})

describe('default metrics', () => {
  it("sample the loop's delay once a second, and show its lag and utilization when scraped", async () => {
    const monitor = vi.spyOn(perfHooks, 'monitorEventLoopDelay')
    const { registry } = createMetrics(
      () => undefined,
      () => undefined,
    )
    expect(monitor).toHaveBeenCalledTimes(1)
    expect(monitor.mock.calls[0]?.[0]?.resolution).toBeGreaterThanOrEqual(1000)
    const families = new Map(parsePrometheus(await registry.metrics()).map((family) => [family.name, family]))
    const value = (name: string) => Number(families.get(name)?.metrics[0]?.value)
    expect(value('analyst_nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0)
    const utilization = value('analyst_nodejs_eventloop_utilization')
    expect(utilization).toBeGreaterThan(0)
    expect(utilization).toBeLessThanOrEqual(1)
    // The series dashboards read are all kept.
    expect(families.has('analyst_nodejs_eventloop_lag_p99_seconds')).toBe(true)
    // The rest of prom-client's defaults are still there.
    expect(value('analyst_process_open_fds')).toBeGreaterThan(0)
    expect(families.has('analyst_nodejs_heap_size_used_bytes')).toBe(true)
  })
})
