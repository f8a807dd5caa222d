#!/usr/bin/env node
// What a cold create forked from the zygote costs each process, from /proc: CPU time (schedstat,
// nanoseconds) and minor page faults of the zygote (T, per fork), the jail's init (G) and the
// kernel (K) once create has returned; beside the create's wall time. CPU and faults hold on a
// busy machine where wall times do not; on a VM a page fault can cost tens of microseconds, and a
// forked sandbox's start is mostly its page faults (each page written after a fork is a copy).
// Usage: node bench/fork-cost.mjs [N] [DIST...]   (root; `npm run build` first; several builds,
// e.g. a scratch worktree's dist/, are measured in turns, each in a process of its own)
import { execFileSync } from 'node:child_process'
import { subscribe } from 'node:diagnostics_channel'
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

if (process.geteuid?.() !== 0) {
  console.log('### Fork cost\n\nSkipped: forking from the zygote needs root.')
  process.exit(0)
}
const [count, ...dists] = process.argv.slice(2).filter((arg) => arg !== '--child')
const N = Number(count ?? 10)
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

if (process.argv.includes('--child')) {
  const dist = dists[0]
  const { LocalProvider, Sandbox } = await import(join(dist, 'index.js'))
  const provider = new LocalProvider({ poolSize: 0, coldStart: 'fork' })
  for (let i = 0; i < 2; i++) await (await Sandbox.create({ provider })).kill() // the zygote starts
  const stat = (pid) => {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    const cpuMs = Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6
    return { faults: Number(fields[7]), cpuMs }
  }
  const children = (pid) =>
    readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  const descendants = (pid) => children(pid).flatMap((child) => [child, ...descendants(child)])
  const command = (pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8')
  const zygote = descendants(process.pid).find(
    (pid) => command(pid).includes('analyst_zygote.py') && !command(pid).startsWith('bwrap'),
  )
  const rows = { wall: [], T: [], G: [], K: [], 'T faults': [], 'G faults': [], 'K faults': [] }
  let shells = 0
  // Each create's phases (analyst:fork-trace, CLOCK_MONOTONIC ns): how long each took after the one before.
  let phases = []
  subscribe('analyst:fork-trace', (message) => phases.push(...message.phases))
  const steps = {}
  const ns = () => Number(process.hrtime.bigint())
  for (let i = 0; i < N; i++) {
    const before = stat(zygote)
    const start = performance.now()
    phases = [['create', ns()]]
    const sandbox = await Sandbox.create({ provider })
    rows.wall.push(performance.now() - start)
    // A create that found the jail shell made ahead has no 'G forked' phase (its G was forked before).
    shells += phases.some(([phase]) => phase === 'G forked') ? 0 : 1
    phases.push(['create returned', ns()])
    for (let j = 1; j < phases.length; j++) {
      const name = `${phases[j - 1][0]} → ${phases[j][0]}`
      steps[name] ??= []
      steps[name].push((phases[j][1] - phases[j - 1][1]) / 1e6)
      // The process's minor faults in that phase (T, G and K count their own from their fork).
      const [phase, , faults] = phases[j]
      if (faults === undefined) continue
      const same = phases[j - 1][0][0] === phase[0] && phases[j - 1][2] !== undefined
      steps[`${name} (faults)`] ??= []
      steps[`${name} (faults)`].push(same ? faults - phases[j - 1][2] : faults)
    }
    const after = stat(zygote)
    // The sandbox's init: the zygote's last child with a kernel (a jail shell waiting for the next has none).
    const init = children(zygote)
      .filter((pid) => children(pid).length > 0)
      .at(-1)
    const kernel = stat(children(init)[0])
    const jail = stat(init)
    rows.T.push(after.cpuMs - before.cpuMs)
    rows['T faults'].push(after.faults - before.faults)
    rows.G.push(jail.cpuMs)
    rows['G faults'].push(jail.faults)
    rows.K.push(kernel.cpuMs)
    rows['K faults'].push(kernel.faults)
    await sandbox.kill()
  }
  await provider.close()
  const medians = (table) =>
    Object.fromEntries(Object.entries(table).map(([key, values]) => [key, median(values)]))
  console.log(JSON.stringify({ ...medians(rows), shells, phases: medians(steps) }))
} else {
  const builds = dists.length > 0 ? dists : [join(fileURLToPath(import.meta.url), '..', '..', 'dist')]
  const rows = []
  const phases = []
  for (let round = 0; round < 2; round++) {
    for (const dist of builds) {
      const load = loadavg()[0].toFixed(1)
      const out = execFileSync(
        process.execPath,
        [fileURLToPath(import.meta.url), '--child', String(N), dist],
        {
          encoding: 'utf8',
        },
      )
      const m = JSON.parse(out.trim().split('\n').at(-1))
      phases.push([dist, m.phases])
      rows.push(
        `| ${dist} | ${m.wall.toFixed(0)} ms | ${m.shells} of ${N} | ${m.T.toFixed(1)} / ${m['T faults']} | ${m.G.toFixed(1)} / ${m['G faults']} | ${m.K.toFixed(1)} / ${m['K faults']} | ${load} |`,
      )
    }
  }
  console.log(`### Cold fork: CPU and page faults per process (${N} creates per build and round, medians)

| build | create p50 | creates that found a jail shell | zygote T per fork: CPU ms / faults | init G | kernel K (to ready) | load |
| --- | --- | --- | --- | --- | --- | --- |
${rows.join('\n')}`)
  // Where a create's time goes, phase by phase (medians of the same creates), per build and round.
  const names = [...new Set(phases.flatMap(([, m]) => Object.keys(m)))].filter(
    (name) => !name.endsWith('(faults)'),
  )
  const cell = (m, name) =>
    `${m[name]?.toFixed(2) ?? ''}${m[`${name} (faults)`] === undefined ? '' : ` / ${m[`${name} (faults)`]}`}`
  console.log(`
### Cold fork, phase by phase (ms / minor faults, medians; each phase from the end of the one before)

| phase | ${phases.map(([dist]) => dist).join(' | ')} |
| --- | ${phases.map(() => '---').join(' | ')} |
${names.map((name) => `| ${name} | ${phases.map(([, m]) => cell(m, name)).join(' | ')} |`).join('\n')}`)
}
