/**
 * /metrics in Prometheus' text format (prom-client), one registry per server: sessions open here,
 * runs in progress and questions waiting, the warm pool, the sandboxes' memory against its budget, sandbox start and cell durations, model
 * latency and tokens by model, blocked attempts by layer, HTTP requests by route and status.
 * @module
 */
import { performance } from 'node:perf_hooks'
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import type { SandboxProvider } from '../sandbox/index.js'
import type { ServiceObserver, SessionEvent, SessionService } from '../session/index.js'
import { sandboxBlocks } from '../session/index.js'

export interface ServerMetrics {
  registry: Registry
  /** Feeds the service's events in (give it to the service as its observer). */
  observer: ServiceObserver
  /** Counts an HTTP request once answered. */
  request(route: string, method: string, status: number, seconds: number): void
}

/**
 * prom-client's default metrics, with its event-loop delay monitor sampling once a second: at its
 * default of 10 ms it woke an idle server 100 times a second. The series stay the same; a delay
 * shorter than a second is still seen by the scrape's own lag (`nodejs_eventloop_lag_seconds`).
 * Beside them, the loop's utilization since the last scrape (libuv's idle time, read when scraped).
 */
function defaultMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, prefix: 'analyst_', eventLoopMonitoringPrecision: 1000 })
  let since = performance.eventLoopUtilization()
  new Gauge({
    name: 'analyst_nodejs_eventloop_utilization',
    help: 'Share of the time since the last scrape that the event loop was busy (0 to 1).',
    registers: [registry],
    collect() {
      const now = performance.eventLoopUtilization()
      this.set(performance.eventLoopUtilization(now, since).utilization)
      since = now
    },
  })
}

const SECONDS = [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]

export function createMetrics(
  service: () => SessionService | undefined,
  provider: () => SandboxProvider | undefined,
): ServerMetrics {
  const registry = new Registry()
  defaultMetrics(registry)
  const gauge = (name: string, help: string, value: () => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(value())
      },
    })
  gauge(
    'analyst_live_sessions',
    'Sessions whose sandbox is open in this replica',
    () => service()?.liveSessions ?? 0,
  )
  gauge(
    'analyst_runs_in_progress',
    'Questions being answered in this replica',
    () => (service()?.busy ?? 0) - (service()?.waiting ?? 0),
  )
  gauge(
    'analyst_questions_queued',
    'Questions waiting for their session’s turn',
    () => service()?.waiting ?? 0,
  )
  const pool = () =>
    (provider() as { poolStats?: { ready: number; size: number; hits: number; misses: number } })?.poolStats
  gauge('analyst_pool_size', 'Kernels the warm pool keeps ready', () => pool()?.size ?? 0)
  gauge('analyst_pool_ready', 'Kernels ready in the warm pool now', () => pool()?.ready ?? 0)
  gauge(
    'analyst_pool_hits',
    'Sandboxes that took a kernel from the warm pool (since start)',
    () => pool()?.hits ?? 0,
  )
  gauge(
    'analyst_pool_misses',
    'Sandboxes that started their own kernel (since start)',
    () => pool()?.misses ?? 0,
  )

  gauge(
    'analyst_sandbox_memory_bytes',
    'Memory all sandboxes use together (their parent cgroup; 0 where the engine does not measure it)',
    () => provider()?.memoryUse?.()?.usedBytes ?? 0,
  )
  gauge(
    'analyst_sandbox_memory_budget_bytes',
    'Their memory budget (ANALYST_MEMORY_BUDGET): idle sessions are paused before it is reached',
    () => provider()?.memoryUse?.()?.budgetBytes ?? 0,
  )

  const sandboxCreate = new Histogram({
    name: 'analyst_sandbox_create_seconds',
    help: 'Opening a session’s sandbox, its data and replayed cells included',
    buckets: SECONDS,
    registers: [registry],
  })
  const cell = new Histogram({
    name: 'analyst_cell_seconds',
    help: 'Running one cell the model wrote',
    buckets: SECONDS,
    registers: [registry],
  })
  const modelLatency = new Histogram({
    name: 'analyst_model_latency_seconds',
    help: 'From asking the model for a step to its first words or code',
    labelNames: ['model'],
    buckets: SECONDS,
    registers: [registry],
  })
  const tokens = new Counter({
    name: 'analyst_model_tokens_total',
    help: 'Tokens of model calls',
    labelNames: ['model', 'kind'],
    registers: [registry],
  })
  const blocked = new Counter({
    name: 'analyst_blocked_total',
    help: 'Attempts the guard or the sandbox stopped',
    labelNames: ['layer', 'rule'],
    registers: [registry],
  })
  const requests = new Counter({
    name: 'analyst_http_requests_total',
    help: 'HTTP requests answered',
    labelNames: ['route', 'method', 'status'],
    registers: [registry],
  })
  const requestSeconds = new Histogram({
    name: 'analyst_http_request_seconds',
    help: 'Time to answer an HTTP request (to the start of a stream)',
    labelNames: ['route', 'method'],
    buckets: SECONDS,
    registers: [registry],
  })

  /** When each session's current step asked the model. */
  const asked = new Map<string, number>()
  const observe = (event: SessionEvent, { sessionId, model }: { sessionId: string; model: string }) => {
    switch (event.type) {
      case 'step-start':
        asked.set(sessionId, performance.now())
        break
      case 'model-text-delta':
      case 'model-text':
      case 'code':
      case 'answer': {
        const since = asked.get(sessionId)
        if (since !== undefined) {
          modelLatency.observe({ model }, (performance.now() - since) / 1000)
          asked.delete(sessionId)
        }
        break
      }
      case 'usage':
        tokens.inc({ model, kind: 'input' }, event.usage.inputTokens)
        tokens.inc({ model, kind: 'output' }, event.usage.outputTokens)
        break
      case 'step-end': {
        const { record } = event
        if (record.execution) cell.observe(record.durationMs / 1000)
        for (const violation of record.violations ?? []) blocked.inc({ layer: 'guard', rule: violation.rule })
        const stderr = record.execution?.logs.stderr.join('') ?? ''
        for (const block of sandboxBlocks(record.execution?.error, stderr))
          blocked.inc({ layer: 'sandbox', rule: block.rule })
        break
      }
      case 'done':
        asked.delete(sessionId)
        break
    }
  }

  return {
    registry,
    observer: {
      event: observe,
      sandboxOpened: (ms) => sandboxCreate.observe(ms / 1000),
    },
    request(route, method, status, seconds) {
      requests.inc({ route, method, status: String(status) })
      requestSeconds.observe({ route, method }, seconds)
    },
  }
}
