/**
 * A process as a record names it: a mark stays true of its process while it runs, and is false of
 * another process that has its pid but started later.
 */
import { spawn } from 'node:child_process'
import { expect, it } from 'vitest'
import { markRunning, PROCESS_MARK, processMark } from './processes.js'

it('tells a running process from a later one given the same pid, by when it started', async () => {
  const child = spawn('sleep', ['30'])
  const exited = new Promise((resolve) => child.once('exit', resolve))
  try {
    const mark = processMark(child.pid)
    expect(mark).toMatch(new RegExp(`^${PROCESS_MARK.source}$`))
    expect(mark).toMatch(/^\d+-[0-9a-f]{8}-\d+$/) // Linux: the start is known
    expect(markRunning(mark)).toBe(true)
    expect(markRunning(String(child.pid))).toBe(true) // an older name, the pid alone
    // The same pid, started a tick before: the process that had the pid first, long gone.
    const [pid, boot, ticks] = mark.split('-')
    expect(markRunning(`${pid}-${boot}-${Number(ticks) - 1}`)).toBe(false)
    // The same pid and tick in another boot.
    expect(markRunning(`${pid}-${boot === '00000000' ? '00000001' : '00000000'}-${ticks}`)).toBe(false)
  } finally {
    child.kill('SIGKILL')
    await exited
  }
  expect(markRunning(processMark(process.pid))).toBe(true)
})
