/**
 * Why a kernel that the OOM killer took was out of memory, in the words of its death notice. Each
 * limit has its own remedy: a sandbox over its own limit needs a larger one (`--memory`), one
 * taken because all sandboxes together filled their budget needs only to wait for the others (or
 * the operator a larger ANALYST_MEMORY_BUDGET), and one taken by the host's own OOM killer
 * means the budget is larger than the machine can hold. src/fixes.ts reads these words.
 * @module
 */
import { formatBytes } from '../cell-output.js'
import type { OomCause, SandboxesMemory } from './cgroup.js'

export interface OutOfMemory {
  cause: OomCause
  /** The sandbox's own limit. */
  limitBytes: number
  /** What its group still holds (its workspace's files), read once the kernel is gone. */
  ownBytes: number
  /** What all sandboxes use now, and their budget. */
  all: SandboxesMemory | undefined
}

/** The words of the limit that ran out. */
export function outOfMemory({ cause, limitBytes, ownBytes, all }: OutOfMemory): string {
  if (cause === 'own') return `out of memory: the sandbox may use ${formatBytes(limitBytes)}`
  const budget = all
    ? `the memory budget of all sandboxes (ANALYST_MEMORY_BUDGET, ${formatBytes(all.budgetBytes)})`
    : 'the memory budget of all sandboxes (ANALYST_MEMORY_BUDGET)'
  if (cause === 'host') {
    return `out of memory: the machine ran out of memory, not this sandbox's own limit (${formatBytes(limitBytes)}) nor ${budget}`
  }
  // Read once the kernel is gone: what is in use now is the others', and this workspace's files.
  const others = all
    ? ` the other sandboxes use ${formatBytes(Math.max(0, all.usedBytes - ownBytes))} of it:`
    : ''
  return `out of memory: ${budget} was full, not this sandbox's own limit (${formatBytes(limitBytes)});${others} try again once they have finished or been paused`
}
