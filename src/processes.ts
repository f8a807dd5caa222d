/**
 * This host's processes, as the records of other processes name them (a blob writer's temporary
 * file, a Jupyter kernel's record): whether the one that wrote a record is still there.
 * @module
 */

/** Whether a process of this host is running (one of another user's is: it cannot be signalled). */
export function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
