/**
 * A process as a restarted container's server is: node running a script as pid 2 of a pid
 * namespace of its own (bwrap is its pid 1), so that two of them, one after the other, have the
 * same pid. The host's file system and hostname. The namespace ends when node does, or when the
 * bwrap started here is killed (or its parent dies).
 * @module
 */
import { spawn } from 'node:child_process'

export function inPidNamespace(script: string, stdio: 'inherit' | 'pipe' = 'inherit') {
  return spawn(
    'bwrap',
    [
      '--dev-bind',
      '/',
      '/',
      '--unshare-pid',
      '--die-with-parent',
      '--proc',
      '/proc',
      process.execPath,
      '--input-type=module',
      '-e',
      script,
    ],
    { stdio: ['ignore', stdio, 'inherit'] },
  )
}
