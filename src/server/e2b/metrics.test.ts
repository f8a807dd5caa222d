import { describe, expect, it } from 'vitest'
import { MetricsHistory } from './metrics.js'

const usage = (cpuSeconds: number) => ({
  cpuSeconds,
  cpuCount: 2,
  memoryUsed: 100,
  memoryCache: 10,
  memoryTotal: 1000,
  diskUsed: 5,
  diskTotal: 50,
})

describe('MetricsHistory', () => {
  it('gives the CPU used between two samples as a share of all the CPUs', () => {
    const history = new MetricsHistory(0)
    history.record(usage(1), 10_000) // 1 s of CPU in 10 s on 2 CPUs
    history.record(usage(3), 12_000) // 2 s more in 2 s
    expect(history.between().map((s) => s.cpuUsedPct)).toEqual([5, 50])
    expect(history.between()[0]).toMatchObject({
      timestampUnix: 10,
      timestamp: new Date(10_000).toISOString(),
      memUsed: 100,
      memCache: 10,
      memTotal: 1000,
      diskUsed: 5,
      diskTotal: 50,
    })
  })

  it('keeps the samples within the seconds asked for, both ends included', () => {
    const history = new MetricsHistory(0)
    for (const at of [5_000, 10_000, 15_000]) history.record(usage(0), at)
    expect(history.between(10, 15).map((s) => s.timestampUnix)).toEqual([10, 15])
    expect(history.between(undefined, 9).map((s) => s.timestampUnix)).toEqual([5])
    expect(history.between(20)).toEqual([])
  })

  it('counts a resumed sandbox, whose CPU time starts again at zero, from zero', () => {
    const history = new MetricsHistory(0)
    history.record(usage(8), 10_000)
    history.record(usage(1), 20_000)
    expect(history.between().at(-1)?.cpuUsedPct).toBe(5)
  })
})
