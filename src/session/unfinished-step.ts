/**
 * The step that is running, gathered from its events as they pass (its code, what it printed and
 * showed so far, its error): what the store keeps of it when its run stops before the step ends
 * (a person's Stop, a lost connection, a failure), so that a reload shows the step as it was.
 * @module
 */
import type { AgentEvent, StepRecord } from '../agent/index.js'

type Execution = NonNullable<StepRecord['execution']>

export class UnfinishedStep {
  private record: (StepRecord & { execution: Execution }) | undefined
  private started = 0

  /** Follows one event of the run; a step's end forgets it (the step is kept whole then). */
  see(event: AgentEvent): void {
    if (event.type === 'code') {
      this.started = Date.now()
      this.record = {
        step: event.step,
        code: event.code,
        artifacts: [],
        durationMs: 0,
        execution: {
          results: [],
          logs: { stdout: [], stderr: [] },
          error: undefined,
          executionCount: undefined,
          artifacts: [],
        },
      }
      return
    }
    const record = this.record
    if (event.type === 'step-end' || event.type === 'guard') this.record = undefined
    if (!record || !('step' in event) || event.step !== record.step) return
    const { execution } = record
    if (event.type === 'stdout') execution.logs.stdout.push(event.text)
    else if (event.type === 'stderr') execution.logs.stderr.push(event.text)
    else if (event.type === 'result') execution.results.push(plain(event.result))
    else if (event.type === 'error') execution.error = plain(event.error)
  }

  /** The running step as far as it got, once: none when no step was running. */
  take(): StepRecord | undefined {
    const record = this.record
    this.record = undefined
    if (record) record.durationMs = Date.now() - this.started
    return record
  }
}

/** A sandbox object as its JSON (an event passed on as JSON is one already). */
function plain<T extends object>(value: T): T extends { toJSON(): infer J } ? J : T {
  const json = (value as { toJSON?: () => unknown }).toJSON
  return (typeof json === 'function' ? json.call(value) : value) as never
}
