/**
 * Churn against `analyst serve` (the built command, with the fake OpenAI-compatible model): people
 * at once, each over and over creating a session, uploading the sample data, asking three
 * questions and deleting it, while what the server holds is sampled: its RSS, open file
 * descriptors, processes, its sandboxes' cgroups, temporary folders and database handles. Used by
 * test/server/soak.test.ts (a short run that checks nothing leaks) and bench/soak.mjs (30 minutes).
 */
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { type ChatRequest, startFakeOpenAI } from './fake-openai.js'
import { startServe } from './serve.js'

export interface SoakSample {
  /** Seconds since the churn began (negative: before it, the baseline). */
  atSeconds: number
  rssMiB: number
  /**
   * The server's heap after a full collection (what is still referenced: a leak grows it): its
   * own last one during the churn, one of the probe's at the baseline and after (heap-probe.mjs).
   * And what V8 keeps committed for the heap, which RSS follows.
   */
  heapUsedMiB: number
  heapTotalMiB: number
  /** Open file descriptors other than sockets, and sockets (clients' keep-alive connections among them). */
  fds: number
  sockets: number
  processes: number
  cgroups: number
  tempFolders: number
  /** Open handles on the store's database files (SQLite's connections). */
  databaseFiles: number
  /** Cycles (create → upload → 3 questions → delete) finished so far, and failed. */
  cycles: number
  failures: number
}

export interface SoakResult {
  baseline: SoakSample
  samples: SoakSample[]
  /**
   * Halfway, the churn stopped and the server settled, as after it: the warm-up (compiled code,
   * pools) lies before it, so that what the second half leaves behind is what each cycle leaks.
   */
  middle: SoakSample
  /** After the churn stopped and the server settled. */
  after: SoakSample
  failures: string[]
}

const SALES = readFileSync(resolve('examples/sales.csv'))
const QUESTIONS = [
  "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\nprint(df.shape)",
  "print(df.groupby('region').order_value.sum().round(2))",
  'print(round(df.order_value.mean(), 2))',
]

/** One reply for any request: code for a question, then a short answer once the cell has run. */
function reply(request: ChatRequest) {
  const last = request.messages.at(-1)
  if (
    last?.role === 'tool' ||
    (last?.role === 'user' && /^(Output|Observation|\[)/.test(String(last.content)))
  )
    return { content: 'Done.' }
  const asked = request.messages.filter((message) => message.role === 'user').length
  return { code: QUESTIONS[(asked - 1) % QUESTIONS.length] as string }
}

function descendants(root: number): number[] {
  const children = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)])
    } catch {
      // exited
    }
  }
  const found: number[] = []
  const walk = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      found.push(child)
      walk(child)
    }
  }
  walk(root)
  return found
}

function countDirs(dir: string): number {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isDirectory()).length
  } catch {
    return 0
  }
}

/** The server's parent cgroup of sandboxes (cgroup.ts), in the memory hierarchy or v2's. */
function sandboxGroupsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const tag = `${pid}-${stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]}`
  for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n')) {
    const [, controllers, path] = line.split(':')
    if (controllers?.split(',').includes('memory'))
      return countDirs(join('/sys/fs/cgroup/memory', path ?? '/', `analyst-${tag}`))
    if (line.startsWith('0::')) {
      const v2 = countDirs(join('/sys/fs/cgroup', path ?? '/', `analyst-${tag}`))
      if (v2 > 0) return v2
    }
  }
  return 0
}

const PROBE = resolve('test/support/heap-probe.mjs')

/** The server's heap after a full collection, its own or the probe's (`collect`), through the probe loaded into it. */
async function heapAfterGc(
  pid: number,
  file: string,
  collect: boolean,
): Promise<{ live: number; heapTotal: number }> {
  const read = () => {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as { count: number; live: number; heapTotal: number }
    } catch {
      return undefined
    }
  }
  const before = read()?.count ?? 0
  if (collect) writeFileSync(`${file}.collect`, '')
  process.kill(pid, 'SIGUSR2')
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    const now = read()
    if (now && now.count > before) return now
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error('The server did not answer the heap probe within 30 s')
}

async function sample(
  pid: number,
  tmp: string,
  started: number,
  cycles: number,
  failures: number,
  collect = false,
): Promise<SoakSample> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const fds = readdirSync(`/proc/${pid}/fd`)
  let databaseFiles = 0
  let sockets = 0
  for (const fd of fds) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`)
      if (/\.db(-wal|-shm)?$/.test(target)) databaseFiles++
      if (target.startsWith('socket:')) sockets++
    } catch {
      // closed meanwhile
    }
  }
  // The server's own temporary folders and, in its runtime folder, one per sandbox (sb-…).
  let tempFolders = countDirs(tmp)
  for (const runtime of readdirSync(tmp).filter((name) => name.startsWith('analyst-'))) {
    for (const own of readdirSync(join(tmp, runtime)).filter((name) => /^\d+-\d+$/.test(name)))
      tempFolders += countDirs(join(tmp, runtime, own))
  }
  // After RSS was read: a collection of the probe's own gives back pages that the server keeps.
  const heap = await heapAfterGc(pid, join(tmp, 'heap.json'), collect)
  return {
    atSeconds: Math.round((Date.now() - started) / 1000),
    rssMiB: Math.round(Number(status.match(/^VmRSS:\s+(\d+)/m)?.[1] ?? 0) / 1024),
    heapUsedMiB: Math.round((heap.live / 2 ** 20) * 10) / 10,
    heapTotalMiB: Math.round(heap.heapTotal / 2 ** 20),
    fds: fds.length - sockets,
    sockets,
    processes: descendants(pid).length,
    cgroups: sandboxGroupsOf(pid),
    tempFolders,
    databaseFiles,
    cycles,
    failures,
  }
}

async function cycle(url: string): Promise<void> {
  const created = await fetch(`${url}/api/sessions`, { method: 'POST', body: '{}' })
  if (created.status !== 201) throw new Error(`create: ${created.status} ${await created.text()}`)
  const { id } = (await created.json()) as { id: string }
  const form = new FormData()
  form.append('file', new Blob([SALES]), 'sales.csv')
  const uploaded = await fetch(`${url}/api/sessions/${id}/files`, { method: 'POST', body: form })
  if (uploaded.status !== 201) throw new Error(`upload: ${uploaded.status} ${await uploaded.text()}`)
  for (const question of ['How many rows?', 'By region?', 'The mean?']) {
    const response = await fetch(`${url}/api/sessions/${id}/ask`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ question }),
    })
    const text = await response.text()
    if (response.status !== 200 || !text.includes('event: done'))
      throw new Error(`ask: ${response.status} ${text.slice(-300)}`)
  }
  const deleted = await fetch(`${url}/api/sessions/${id}`, { method: 'DELETE' })
  if (deleted.status >= 300) throw new Error(`delete: ${deleted.status}`)
}

/** Runs the churn for `seconds`, sampling every `sampleSeconds`; the server is stopped after. */
export async function soak(options: {
  seconds: number
  people: number
  sampleSeconds: number
  onSample?: (sample: SoakSample) => void
}): Promise<SoakResult> {
  const tmp = mkdtempSync(join(tmpdir(), 'analyst-soak-'))
  const model = await startFakeOpenAI(Array.from({ length: 1_000_000 }, () => reply))
  const served = await startServe([], {
    PATH: process.env.PATH ?? '',
    TMPDIR: tmp,
    ANALYST_HOME: join(tmp, 'home'),
    ANALYST_MODEL: 'openai-compatible:fake',
    ANALYST_BASE_URL: model.url,
    NO_COLOR: '1',
    NODE_OPTIONS: `--expose-gc --import ${PROBE}`,
    ANALYST_HEAP_PROBE: join(tmp, 'heap.json'),
  })
  const pid = served.child.pid as number
  const failures: string[] = []
  let cycles = 0
  try {
    // One cycle first: the zygote, the pool and the store are up, as they stay.
    await cycle(served.url)
    await settle()
    const started = Date.now()
    const baseline = { ...(await sample(pid, tmp, started, 0, 0, true)), atSeconds: 0 }
    const samples: SoakSample[] = [baseline]
    options.onSample?.(baseline)
    const half = started + options.seconds * 500
    const deadline = started + options.seconds * 1000
    const person = async (until: number) => {
      while (Date.now() < until) {
        await cycle(served.url).then(
          () => cycles++,
          (error: Error) => failures.push(error.message),
        )
      }
    }
    const timer = setInterval(() => {
      sample(pid, tmp, started, cycles, failures.length).then(
        (taken) => {
          samples.push(taken)
          options.onSample?.(taken)
        },
        (error: Error) => failures.push(`sample: ${error.message}`),
      )
    }, options.sampleSeconds * 1000)
    const churn = (until: number) => Promise.all(Array.from({ length: options.people }, () => person(until)))
    await churn(half)
    await settle()
    const middle = await sample(pid, tmp, started, cycles, failures.length, true)
    options.onSample?.(middle)
    await churn(deadline)
    clearInterval(timer)
    await settle()
    const after = await sample(pid, tmp, started, cycles, failures.length, true)
    options.onSample?.(after)
    return { baseline, samples, middle, after, failures }
  } finally {
    served.child.kill('SIGTERM')
    await new Promise((resolve) => served.child.once('exit', resolve))
    await model.close()
    rmSync(tmp, { recursive: true, force: true })
  }
}

/** Sandboxes and their folders end a moment after their session is deleted. */
function settle() {
  return new Promise((resolve) => setTimeout(resolve, 3000))
}
