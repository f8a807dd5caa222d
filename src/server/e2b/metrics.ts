/**
 * E2B's sandbox metrics (GET /sandboxes/:id/metrics): a series of samples, each taken when a
 * client asks, from the engine's counters. CPU is the share of the sandbox's CPUs used since the
 * sample before (or since the sandbox started).
 * @module
 */
import type { SandboxMetrics } from '../../sandbox/index.js'

/** E2B's SandboxMetric, as its API sends it. */
export interface MetricSample {
  timestamp: string
  timestampUnix: number
  cpuCount: number
  cpuUsedPct: number
  memUsed: number
  memTotal: number
  memCache: number
  diskUsed: number
  diskTotal: number
}

/** Samples kept per sandbox: an hour of them at one every five seconds. */
const KEPT = 720

export class MetricsHistory {
  private readonly samples: MetricSample[] = []
  private last: { at: number; cpuSeconds: number }

  constructor(startedAt: number) {
    this.last = { at: startedAt, cpuSeconds: 0 }
  }

  /** Adds a sample of `metrics`, read now. */
  record(metrics: SandboxMetrics, now = Date.now()) {
    const cpuSeconds = metrics.cpuSeconds ?? 0
    // A resumed sandbox counts from zero again.
    const used = cpuSeconds >= this.last.cpuSeconds ? cpuSeconds - this.last.cpuSeconds : cpuSeconds
    const elapsed = Math.max(now - this.last.at, 1) / 1000
    this.last = { at: now, cpuSeconds }
    this.samples.push({
      timestamp: new Date(now).toISOString(),
      timestampUnix: Math.floor(now / 1000),
      cpuCount: metrics.cpuCount,
      cpuUsedPct: Math.min(100, Math.round((used / elapsed / metrics.cpuCount) * 10_000) / 100),
      memUsed: metrics.memoryUsed,
      memTotal: metrics.memoryTotal,
      memCache: metrics.memoryCache,
      diskUsed: metrics.diskUsed,
      diskTotal: metrics.diskTotal,
    })
    if (this.samples.length > KEPT) this.samples.shift()
  }

  /** The samples between `start` and `end` (Unix seconds, both included, as E2B takes them). */
  between(start?: number, end?: number): MetricSample[] {
    return this.samples.filter(
      (sample) =>
        (start === undefined || sample.timestampUnix >= start) &&
        (end === undefined || sample.timestampUnix <= end),
    )
  }
}
