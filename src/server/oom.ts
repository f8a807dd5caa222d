/**
 * The server is never the OOM killer's choice: it lowers its own score, and each kernel raises its
 * own (home.ts KERNEL_OOM_SCORE_ADJ), so when memory runs out (on the host, or in a container's or
 * pod's cgroup) a kernel goes, never the process that holds every session.
 * @module
 */
import { writeFileSync } from 'node:fs'

/** What the server adds to its OOM score (-1000 would exempt it; a little above leaves it a last resort). */
export const SERVER_OOM_SCORE_ADJ = -900

/** Lowers this process's OOM score where it is permitted (root, CAP_SYS_RESOURCE); false where not. */
export function avoidOomKiller(adj = SERVER_OOM_SCORE_ADJ): boolean {
  try {
    writeFileSync('/proc/self/oom_score_adj', String(adj))
    return true
  } catch {
    return false
  }
}
