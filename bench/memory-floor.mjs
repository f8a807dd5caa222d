#!/usr/bin/env node
// The memory floor of a sandbox: the smallest memory limit (--memory, the kernel's RLIMIT_AS) at
// which a kernel starts and runs a numpy product, and the kernel's threads and address space after
// that product, at --cpus 1 and with no CPU quota, forked from the zygote and spawned. OpenBLAS
// starts a thread per host core unless told otherwise (issue #35): run it against this build and
// another (--dist /work/main/dist, the code before the cap) to compare, one after the other.
// Usage: node bench/memory-floor.mjs [--dist DIR] [--quick] [--no-floor]   (root: cgroups and the zygote)
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { loadAverage, machine, table } from './util.mjs'

const argument = (name) => {
  const at = process.argv.indexOf(name)
  return at >= 0 ? process.argv[at + 1] : undefined
}
const dist = resolve(argument('--dist') ?? new URL('../dist', import.meta.url).pathname)
const quick = process.argv.includes('--quick')
/** Threads and address space only, without the search for the floor (a create per try). */
const noFloor = process.argv.includes('--no-floor')
const { LocalProvider, Sandbox } = await import(pathToFileURL(`${dist}/index.js`).href)
if (process.geteuid?.() !== 0) {
  console.log('### Memory floor\n\nSkipped: cgroups and the zygote need root.')
  process.exit(0)
}

const MiB = 1024 ** 2
const PRODUCT = 'import numpy\na = numpy.ones((600, 600))\n(a @ a).shape'
const STATUS = [
  'import os',
  "fields = dict(line.split(':', 1) for line in open('/proc/self/status'))",
  "' '.join(fields[k].split()[0] for k in ('Threads', 'VmPeak', 'VmSize', 'VmRSS'))",
].join('\n')
const loadBefore = loadAverage()

/** Whether a kernel with this memory limit starts and runs the product. */
async function starts(provider, memoryBytes, milliCpus) {
  let sandbox
  try {
    sandbox = await Sandbox.create({
      provider,
      limits: milliCpus ? { memoryBytes, milliCpus } : { memoryBytes },
    })
    // A kernel short of address space can hang in OpenBLAS's thread start: a failure too.
    const run = await sandbox.runCode(PRODUCT, { timeoutMs: 20_000 })
    return run.text === '(600, 600)'
  } catch {
    return false
  } finally {
    await sandbox?.kill().catch(() => {})
  }
}

/** The smallest limit that starts, to the step, between low (fails) and high (starts). */
async function floor(provider, milliCpus) {
  const step = (quick ? 16 : 4) * MiB
  let low = 64 * MiB
  let high = 768 * MiB
  if (!(await starts(provider, high, milliCpus))) return Number.NaN
  while (high - low > step) {
    const middle = Math.round((low + high) / 2 / MiB) * MiB
    if (await starts(provider, middle, milliCpus)) high = middle
    else low = middle
  }
  return high
}

const rows = []
for (const coldStart of ['fork', 'spawn']) {
  const provider = new LocalProvider({ poolSize: 0, coldStart })
  for (const milliCpus of [1000, 0]) {
    const sandbox = await Sandbox.create({ provider, limits: milliCpus ? { milliCpus } : {} })
    const status = async () =>
      String((await sandbox.runCode(STATUS)).text)
        .replace(/'/g, '')
        .split(' ')
        .map(Number)
    const [threadsAtStart, , sizeAtStart] = await status()
    await sandbox.runCode(PRODUCT)
    const [threads, peak, size, rss] = await status()
    await sandbox.kill()
    const smallest = noFloor ? Number.NaN : await floor(provider, milliCpus)
    const mib = (kib) => `${(kib / 1024).toFixed(0)} MiB`
    rows.push([
      coldStart,
      milliCpus ? `${milliCpus / 1000}` : 'none',
      threadsAtStart,
      mib(sizeAtStart),
      threads,
      mib(peak),
      mib(size),
      mib(rss),
      noFloor ? '(not searched)' : `${smallest / MiB} MiB`,
    ])
  }
  await provider.close()
}

console.log(`### Memory floor (\`node bench/memory-floor.mjs${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}\`)

${machine()}; the code of ${dist}; load ${loadBefore} → ${loadAverage()}.

The kernel at its start and after a 600×600 numpy product: its threads (the kernel's own two, and
OpenBLAS's), its address space at its peak and now, its resident memory; and the smallest memory
limit (RLIMIT_AS, to ${quick ? 16 : 4} MiB) at which a kernel starts and runs that product.

${table(['start', '--cpus', 'threads at start', 'VmSize at start', 'threads after', 'VmPeak', 'VmSize', 'VmRSS', 'smallest --memory that starts'], rows)}
`)
process.exit(0)
