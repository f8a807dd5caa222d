/**
 * Which failures of a step were the sandbox stopping something: the network, the file system, a
 * forbidden system call, a limit. Recorded with the session (as are the guard's violations) so an
 * operator can see what code tried.
 * @module
 */

export interface SandboxBlock {
  rule: 'network' | 'filesystem' | 'syscall' | 'memory' | 'time' | 'processes' | 'disk' | 'output' | 'kernel'
  message: string
}

const RULES: Array<[SandboxBlock['rule'], RegExp]> = [
  [
    'network',
    /ConnectionRefused|gaierror|Network is unreachable|name resolution|Name or service not known|No route to host|Connection refused/i,
  ],
  ['filesystem', /Read-only file system|PermissionError|Permission denied/],
  ['syscall', /Operation not permitted/],
  ['memory', /MemoryError|out of memory|Cannot allocate memory/],
  ['time', /TimeoutError|CpuTimeExceeded/],
  ['processes', /Resource temporarily unavailable|can't start new thread/],
  ['disk', /No space left on device|File too large/],
  ['kernel', /KernelDied|KernelRestarted/],
]

/** The sandbox's part in a step's failure and output, if it had one. */
export function sandboxBlocks(
  error: { name: string; value: string } | undefined,
  stderr: string,
): SandboxBlock[] {
  const blocks: SandboxBlock[] = []
  if (error) {
    const text = `${error.name}: ${error.value}`
    const rule = RULES.find(([, pattern]) => pattern.test(text))?.[0]
    if (rule) blocks.push({ rule, message: text.slice(0, 500) })
  }
  for (const marker of stderr.match(/\[(output|results) truncated[^\]]*\]/g) ?? [])
    blocks.push({ rule: 'output', message: marker })
  return blocks
}
