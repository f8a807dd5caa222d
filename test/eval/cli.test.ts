/**
 * `analyst eval` end to end: the built command, a fake OpenAI-compatible model server that answers
 * by a plan (so every score is known in advance), real sandboxes, a real history in ANALYST_HOME.
 * Malformed sets, --json and --out, show/export of a question's session, rate limits, a crash,
 * kill -9 and --resume, and compare.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { evalCommand } from '../../src/cli/commands/eval.js'
import { scoreAnswer } from '../../src/eval/score.js'
import { openStores } from '../../src/store/index.js'
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai.js'
import { waitFor } from '../support/wait.js'
import {
  type Answering,
  answerLines,
  expectedScores,
  makeSet,
  type OracleOptions,
  oracle,
  planOf,
  QUESTIONS,
  questionOfRequest,
} from './support.js'

const BIN = resolve('dist/cli/bin.js')
let dir: string
let set: { dir: string; remove(): void }
const servers: FakeOpenAI[] = []

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-eval-cli-'))
  set = makeSet()
})
afterAll(() => {
  set.remove()
  rmSync(dir, { recursive: true, force: true })
})
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close()
})

interface Running {
  child: ChildProcess
  stderr: () => string
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>
}

/** Starts the CLI without blocking this process (the fake server answers from here). */
function start(args: string[], env: Record<string, string> = {}): Running {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: dir, ANALYST_HOME: join(dir, 'home'), NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr?.on('data', (chunk) => {
    stderr += chunk
  })
  const done = new Promise<{
    code: number | null
    signal: NodeJS.Signals | null
    stdout: string
    stderr: string
  }>((resolveDone) => child.on('close', (code, signal) => resolveDone({ code, signal, stdout, stderr })))
  return { child, stderr: () => stderr, done }
}

const analyst = (args: string[], env?: Record<string, string>) => start(args, env).done

async function modelServer(plan: Record<number, Answering>, options: OracleOptions = {}) {
  const server = await startFakeOpenAI(oracle(plan, options))
  servers.push(server)
  return {
    server,
    env: { ANALYST_MODEL: 'openai-compatible:fake', ANALYST_BASE_URL: server.url },
  }
}

/** The eval run id the command printed when it started. */
function runIdOf(stderr: string): string {
  const id = stderr.match(/Eval run ([0-9a-f-]{36})/)?.[1]
  if (!id) throw new Error(`no run id in: ${stderr}`)
  return id
}

// Each question starts a real sandbox (a jailed Python with pandas): on a loaded 2-core machine a
// run of a few questions takes tens of seconds, more than the default minute when others test too.
describe('analyst eval', { timeout: 180_000 }, () => {
  it('names what is wrong with a malformed set by file and line, without a stack trace', async () => {
    const bad = mkdtempSync(join(dir, 'bad-'))
    writeFileSync(join(bad, 'q-questions.jsonl'), '{"id": 0, "question": "x"}\nnot json\n')
    writeFileSync(join(bad, 'q-labels.jsonl'), '{"id": 0, "common_answers": [["a", "1"]]}\n')
    await analyst(['eval', bad]).then(({ code, stderr }) => {
      expect(code).toBe(2)
      expect(stderr).toContain('No tables/ folder')
    })
    rmSync(join(bad, 'q-labels.jsonl'))
    writeFileSync(join(bad, 'q-labels.jsonl'), '{"id": 0}\n')
    mkdirSync(join(bad, 'tables'))
    const { code, stderr } = await analyst(['eval', bad])
    expect(code).toBe(2)
    expect(stderr).toContain(`${bad}/q-questions.jsonl:1: "format"`)
    expect(stderr).toContain(`${bad}/q-questions.jsonl:2: not valid JSON`)
    expect(stderr).toContain(`${bad}/q-labels.jsonl:1: "common_answers"`)
    expect(stderr).not.toMatch(/\n\s+at /)
  })

  it('scores a whole run as known in advance, with --json, --out, and each session viewable', async () => {
    const plan = planOf('right', 'wrong', 'partial', 'right', 'partial', 'silent')
    const { server, env } = await modelServer(plan)
    const out = join(dir, 'report-1')
    const { code, stdout, stderr } = await analyst(
      ['eval', set.dir, '--concurrency', '2', '--json', '--out', out],
      env,
    )
    expect(code, stderr).toBe(0)
    const report = JSON.parse(stdout)
    // The run id comes first on stderr, so that a killed run can be resumed.
    expect(stderr.split('\n')[0]).toContain(`Eval run ${report.runId}`)
    // Each question is asked with the benchmark's own instructions and told to end with its lines.
    for (const question of QUESTIONS) {
      const asked = server.requests.find((r) => questionOfRequest(r) === question.id)
      const prompt = JSON.stringify(asked?.messages.find((m) => m.role === 'user')?.content)
      expect(prompt, `question ${question.id}`).toContain(JSON.stringify(question.format).slice(1, -1))
      if (question.constraints) expect(prompt).toContain(JSON.stringify(question.constraints).slice(1, -1))
      expect(prompt).toContain('End your final answer with one line per answer')
    }
    for (const key of [
      'runId',
      'model',
      'questions',
      'abq',
      'psaq',
      'uasq',
      'byLevel',
      'byConcept',
      'tokens',
      'durationMs',
      'results',
    ])
      expect(report).toHaveProperty(key)
    expect(report).toMatchObject({ ...expectedScores(plan), model: 'openai-compatible:fake', status: 'done' })
    expect(Object.keys(report.byLevel)).toEqual(['easy', 'medium', 'hard'])
    expect(report.byLevel.easy).toMatchObject(
      expectedScores(
        plan,
        QUESTIONS.filter((q) => q.level === 'easy'),
      ),
    )
    expect(Object.keys(report.results[0]).sort()).toEqual(
      [
        'answer',
        'concepts',
        'correct',
        'durationMs',
        'error',
        'id',
        'incomplete',
        'level',
        'sessionId',
        'steps',
        'subAnswers',
        'tokens',
        'unsupportedNumbers',
      ].sort(),
    )
    expect(report.results.map((r: { id: number }) => r.id)).toEqual([0, 1, 2, 3, 4, 5])
    expect(report.tokens).toBeGreaterThan(0)

    // The model was given the benchmark's instructions.
    const first = server.requests.find((request) => questionOfRequest(request) === 4)
    const prompt = JSON.stringify(first?.messages)
    expect(prompt).toContain('Round the coefficient to two decimals')
    expect(prompt).toContain('@direction[positive or negative]')

    expect(JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'))).toEqual(report)
    const html = readFileSync(join(out, 'report.html'), 'utf8')
    expect(html).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org)/)
    expect(html).toContain('published, not measured here')
    expect(html).toContain('<svg')
    // Failed questions first, with what was expected and what was given.
    expect(html.indexOf('id="q1"')).toBeLessThan(html.indexOf('id="q0"'))
    expect(html).toContain('negative9')
    expect(html).toContain('pd.read_csv(<span class="hljs-string">&#x27;data/people.csv&#x27;')

    const sessionId = report.results[4].sessionId
    const show = await analyst(['show', sessionId])
    expect(show.code).toBe(0)
    expect(show.stdout).toContain('What is the Pearson correlation')
    const exported = await analyst(['export', sessionId, '--format', 'py'])
    expect(exported.stdout).toContain("pd.read_csv('data/people.csv')")
  })

  it('waits out rate limits instead of failing questions, and scores a crash as wrong with its reason', async () => {
    const plan = planOf('right', 'right', 'right', 'right')
    const { env } = await modelServer(plan, { rateLimited: 3, fail: { question: 3, reply: 1, status: 400 } })
    const { code, stdout, stderr } = await analyst(
      ['eval', set.dir, '--ids', '0,1,2,3', '--concurrency', '2', '--json'],
      env,
    )
    expect(code, stderr).toBe(0)
    const report = JSON.parse(stdout)
    expect(report.rateLimits.limited).toBe(3)
    expect(report.rateLimits.pausedMs).toBeGreaterThan(0)
    expect(report.results.map((r: { correct: boolean }) => r.correct)).toEqual([true, true, true, false])
    expect(report.results[3]).toMatchObject({ steps: 1, answer: '' })
    expect(report.results[3].error).toMatch(/HTTP 400.*refused/)
    expect(report).toMatchObject({ errors: 1, abq: 0.75 })
  })

  it('continues a run killed with kill -9 without asking its finished questions again', async () => {
    const plan = planOf('right', 'wrong', 'right', 'partial')
    const slow = await modelServer(plan, { slow: { question: 2, ms: 120_000 } })
    const running = start(['eval', set.dir, '--ids', '0,1,2,3'], slow.env)
    // Killed while question 2 waits for its model: 0 and 1 are done.
    await waitFor(() => slow.server.requests.some((r) => questionOfRequest(r) === 2), {
      what: () => `question 2 to be asked; stderr: ${running.stderr()}`,
      timeoutMs: 90_000,
    })
    running.child.kill('SIGKILL')
    const killed = await running.done
    expect(killed.signal).toBe('SIGKILL')
    const runId = runIdOf(killed.stderr)

    const db = new Database(join(dir, 'home', 'analyst.db'), { readonly: true })
    const rows = db
      .prepare(
        'SELECT question_id, status, session_id FROM eval_results WHERE run_id = ? ORDER BY question_id',
      )
      .all(runId) as Array<{ question_id: number; status: string; session_id: string }>
    db.close()
    expect(rows.map((r) => [r.question_id, r.status])).toEqual([
      [0, 'done'],
      [1, 'done'],
      [2, 'running'],
    ])

    const fresh = await modelServer(plan)
    const { code, stdout, stderr } = await analyst(
      ['eval', '--resume', runId.slice(0, 8), '--json'],
      fresh.env,
    )
    expect(code, stderr).toBe(0)
    const report = JSON.parse(stdout)
    expect(report).toMatchObject({ ...expectedScores(plan, QUESTIONS.slice(0, 4)), runId, status: 'done' })
    const asked = new Set(fresh.server.requests.map((r) => questionOfRequest(r)))
    expect([...asked].sort()).toEqual([2, 3])
    expect(report.results[0].sessionId).toBe(rows[0]?.session_id)
    expect(report.results[1].sessionId).toBe(rows[1]?.session_id)
    expect(report.results[2].sessionId).not.toBe(rows[2]?.session_id)
    expect(report.durationMs).toBeGreaterThan(0)
    // The half-answered session of question 2 is gone.
    const stores = await openStores(join(dir, 'home'), {})
    expect(await stores.history.getSession(rows[2]?.session_id as string)).toBeUndefined()
    await stores.close()

    const again = evalCommand({
      resume: runId,
      model: 'openai:gpt-4.1',
      concurrency: 1,
      json: true,
      cwd: dir,
      env: { ANALYST_HOME: join(dir, 'home') },
    })
    await expect(again).rejects.toThrow(
      `Run ${runId} was made with openai-compatible:fake; it cannot continue with openai:gpt-4.1`,
    )
  })

  it('stops on Ctrl-C with what it has, exit 130, the run marked interrupted and resumable', async () => {
    const { server, env } = await modelServer(planOf('right', 'right'), {
      slow: { question: 1, ms: 120_000 },
    })
    const running = start(['eval', set.dir, '--ids', '0,1'], env)
    await waitFor(() => server.requests.some((r) => questionOfRequest(r) === 1), {
      what: () => `question 1 to be asked; stderr: ${running.stderr()}`,
      timeoutMs: 90_000,
    })
    running.child.kill('SIGINT')
    const { code, stdout, stderr } = await running.done
    expect(code, stderr).toBe(130)
    const runId = runIdOf(stderr)
    expect(stderr).toContain('SIGINT: stopping')
    expect(stdout).toContain(`1 of 2 questions (interrupted: resume with --resume ${runId.slice(0, 8)})`)
    const stores = await openStores(join(dir, 'home'), {})
    expect(await stores.evals.getEvalRun(runId)).toMatchObject({ status: 'interrupted' })
    expect((await stores.evals.evalResults(runId)).map((r) => [r.questionId, r.status])).toEqual([
      [0, 'done'],
      [1, 'running'],
    ])
    await stores.close()
  })

  it('compares two runs: the score difference and the questions that flipped', async () => {
    // Two runs as the harness records them, straight into the store that the command reads.
    const planA = planOf('right', 'wrong', 'right', 'wrong')
    const planB = planOf('right', 'right', 'wrong', 'partial', 'right')
    const stores = await openStores(join(dir, 'home'), {})
    const record = async (plan: Record<number, Answering>) => {
      const run = await stores.evals.createEvalRun({ dataset: set.dir, model: 'm', settings: {} })
      for (const [id, how] of Object.entries(plan)) {
        const question = QUESTIONS[Number(id)] as (typeof QUESTIONS)[number]
        const subAnswers = scoreAnswer(answerLines(question, how), question.answers)
        const correct = subAnswers.every((sub) => sub.correct)
        await stores.evals.putEvalResult(run.id, {
          questionId: question.id,
          status: 'done',
          correct,
          detail: { id: question.id, level: question.level, correct, subAnswers },
        })
      }
      return run.id
    }
    const [runA, runB] = [await record(planA), await record(planB)]
    await stores.close()

    const { code, stdout } = await analyst(['eval', 'compare', runA.slice(0, 8), runB, '--json'])
    expect(code).toBe(0)
    const comparison = JSON.parse(stdout)
    const scoresA = expectedScores(planA, QUESTIONS.slice(0, 4))
    const scoresB = expectedScores(planB, QUESTIONS.slice(0, 4))
    expect(comparison).toMatchObject({ common: 4, nowRight: [1], nowWrong: [2], onlyInA: [], onlyInB: [4] })
    expect(comparison.a).toMatchObject(scoresA)
    expect(comparison.difference.abq).toBeCloseTo(scoresB.abq - scoresA.abq)
    expect(comparison.difference.psaq).toBeCloseTo(scoresB.psaq - scoresA.psaq)
    const text = await analyst(['eval', 'compare', runA, runB])
    expect(text.stdout).toContain('Now right in B (1): 1')
    expect(text.stdout).toContain('Now wrong in B (1): 2')
    expect(text.stdout).toContain('Only in B (1): 4')
    const missing = await analyst(['eval', 'compare', runA, 'nope'])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('No eval run nope')
  })

  it('says what to give when the folder or the model is missing, before any run is recorded', async () => {
    const noFolder = await analyst(['eval'])
    expect(noFolder.code).toBe(2)
    expect(noFolder.stderr).toContain('Give the folder of a benchmark set')
    const noModel = await analyst(['eval', set.dir], { OLLAMA_HOST: '127.0.0.1:9' })
    expect(noModel.code).toBe(2)
    expect(noModel.stderr).toContain('No model is configured')
    expect(noModel.stderr).not.toContain('Eval run')
  })

  it("makes a run a signed-in user's with --owner: its record and its sessions are theirs", async () => {
    const home = join(dir, 'home-owner')
    const stores = await openStores(home, {})
    const alice = await stores.auth.upsertUser({
      issuer: 'https://idp.example.com',
      subject: 'alice',
      name: 'Alice',
      email: 'alice@example.com',
      groups: [],
      admin: false,
    })
    await stores.close()
    const { env } = await modelServer(planOf('right', 'right'))
    const { code, stdout, stderr } = await analyst(
      ['eval', set.dir, '--ids', '0,1', '--json', '--owner', 'Alice@Example.com'],
      { ...env, ANALYST_HOME: home },
    )
    expect(code, stderr).toBe(0)
    const report = JSON.parse(stdout) as { runId: string; results: { sessionId: string }[] }
    const reopened = await openStores(home, {})
    try {
      const run = await reopened.evals.getEvalRun(report.runId)
      expect(run?.settings.owner).toBe(`user:${alice.id}`)
      expect(report.results).toHaveLength(2)
      for (const result of report.results) {
        expect((await reopened.history.getSession(result.sessionId))?.owner).toBe(`user:${alice.id}`)
      }
      // The user's own list has them, as the web UI and the admin page show it.
      expect((await reopened.history.listSessions({ owner: `user:${alice.id}` })).length).toBe(2)
    } finally {
      await reopened.close()
    }
    const nobody = await analyst(['eval', set.dir, '--ids', '0', '--owner', 'bob@example.com'], {
      ...env,
      ANALYST_HOME: home,
    })
    expect(nobody.code).toBe(2)
    expect(nobody.stderr).toContain('No user bob@example.com in this store')
    expect(nobody.stderr).toContain('signed in to analyst serve')
    expect(nobody.stderr).not.toContain('Eval run')
  })
})
