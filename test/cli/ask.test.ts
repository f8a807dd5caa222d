/** `analyst ask` and `analyst chat` end to end: the built command, a fake model server, a real sandbox. */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  type FakeOpenAI,
  lastObservation,
  type ScriptEntry,
  startFakeOpenAI,
} from '../support/fake-openai.js'

const BIN = resolve('dist/cli/bin.js')
const SALES = resolve('examples/sales.csv')
let dir: string
let server: FakeOpenAI | undefined

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-ask-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))
afterEach(async () => {
  await server?.close()
  server = undefined
})

/** Runs the CLI without blocking this process (the fake server answers from here). */
function analyst(args: string[], options: { env?: Record<string, string>; input?: string } = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    const child = execFile(
      process.execPath,
      [BIN, ...args],
      {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', HOME: dir, NO_COLOR: '1', ...options.env },
        timeout: 120_000,
      },
      (error, stdout, stderr) =>
        done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
    child.stdin?.end(options.input ?? '')
  })
}

async function withModel(script: ScriptEntry[]) {
  server = await startFakeOpenAI(script)
  return { ANALYST_MODEL: 'openai-compatible:fake', ANALYST_BASE_URL: server.url }
}

describe('analyst ask', () => {
  it('exits 2 and says how to configure a model when none is', async () => {
    const { code, stderr } = await analyst(['ask', 'How many orders?', '--data', SALES], {
      env: { OLLAMA_HOST: '127.0.0.1:9' },
    })
    expect(code).toBe(2)
    expect(stderr).toContain('No model is configured')
    for (const name of ['--model', 'ANALYST_MODEL', 'OPENAI_API_KEY']) expect(stderr).toContain(name)
    expect(stderr).not.toMatch(/\n\s+at /)
  })

  it("a model's refusal (HTTP 401) is told as it is, with what fixes it, not as missing data", async () => {
    const env = await withModel([{ status: 401, message: 'Incorrect API key provided' }])
    const { code, stderr } = await analyst(['ask', 'How many orders?', '--data', SALES], { env })
    expect(code).toBe(2)
    expect(stderr).toMatch(/HTTP 401.*Incorrect API key/)
    expect(stderr).toMatch(/API key/)
    expect(stderr).not.toMatch(/--data|Pass the file again/)
    expect(stderr).not.toMatch(/\n\s+at /)
  })

  it('shows the steps and the answer, and saves the chart', async () => {
    const env = await withModel([
      {
        prose: 'Plotting revenue by region.',
        code: "import pandas as pd\ns = pd.read_csv('data/sales.csv')\nby_region = s.groupby('region').order_value.sum().round(2)\nprint(by_region)\nby_region.plot.bar(title='Revenue by region')",
      },
      (request) => ({ content: `Revenue by region:\n${lastObservation(request).split('[image]')[0]}` }),
    ])
    const { code, stdout } = await analyst(
      ['ask', 'Revenue by region?', '--data', SALES, '--output-dir', 'out'],
      { env },
    )
    expect(code).toBe(0)
    expect(stdout).toContain("by_region = s.groupby('region')")
    expect(stdout).toMatch(/── answer/)
    const chart = stdout.match(/\[chart saved: (.+)\]/)?.[1]
    expect(chart && readFileSync(chart).subarray(1, 4).toString()).toBe('PNG')
    expect(stdout).not.toContain('Not found in any output')
  })

  it('with --language r the model is told to write R, and its run_r calls run in the R kernel', async () => {
    const seen: { tools: string[]; system: string }[] = []
    const env = await withModel([
      (request) => {
        seen.push({
          tools: (request.tools as Array<{ function: { name: string } }>).map((t) => t.function.name),
          system: String(request.messages[0]?.content),
        })
        const code = 's <- read.csv("data/sales.csv")\nby_region <- aggregate(order_value ~ region, s, sum)\nnrow(s)'
        return { toolCalls: [{ name: 'run_r', arguments: JSON.stringify({ code }) }] }
      },
      (request) => ({ content: `The file has ${lastObservation(request).match(/\[1\] (\d+)/)?.[1]} orders.` }),
    ])
    const { code, stdout } = await analyst(
      ['ask', 'How many orders?', '--data', SALES, '--language', 'r', '--mode', 'tools', '--json'],
      { env },
    )
    expect(code).toBe(0)
    expect(seen[0]?.tools).toEqual(['run_r'])
    expect(seen[0]?.system).toMatch(/running R code/)
    const result = JSON.parse(stdout)
    expect(result.answer).toBe('The file has 400 orders.')
    expect(result.steps[0].execution.results[0].text).toBe('[1] 400')
  })

  it('with --json prints one object with the answer, steps, artifacts, numbers and usage', async () => {
    const env = await withModel([
      {
        code: "import pandas as pd\nn = len(pd.read_csv('data/sales.csv'))\nprint(n)\nopen('count.txt', 'w').write(str(n))",
      },
      { content: 'There are 400 orders, or 401 with the header.' },
    ])
    const { code, stdout } = await analyst(
      ['ask', 'How many orders?', '--data', SALES, '--json', '--output-dir', 'json'],
      { env },
    )
    expect(code).toBe(0)
    const result = JSON.parse(stdout)
    expect(Object.keys(result).sort()).toEqual(
      [
        'answer',
        'artifacts',
        'incomplete',
        'model',
        'sessionId',
        'steps',
        'unsupportedNumbers',
        'usage',
      ].sort(),
    )
    expect(result.unsupportedNumbers).toEqual(['401'])
    expect(result.steps[0].execution.logs.stdout).toEqual(['400\n'])
    expect(result.artifacts[0]).toMatchObject({ name: 'count.txt' })
    expect(readFileSync(result.artifacts[0].savedPath, 'utf8')).toBe('400')
    expect(result.usage.totalTokens).toBeGreaterThan(0)
  })

  it('exits 1 at the step cap, with the JSON still printed', async () => {
    const env = await withModel([{ code: 'x = 1' }, { code: 'x += 1' }])
    const { code, stdout } = await analyst(['ask', 'Loop', '--data', SALES, '--json', '--max-steps', '2'], {
      env,
    })
    expect(code).toBe(1)
    expect(JSON.parse(stdout)).toMatchObject({ incomplete: true })
  })

  it('replays recorded replies and says so', async () => {
    const { code, stdout, stderr } = await analyst([
      'ask',
      'Average order value by segment?',
      '--data',
      SALES,
      '--replay',
      resolve('examples/demo-replies.json'),
    ])
    expect(code).toBe(0)
    expect(stderr).toContain('recorded replies')
    expect(stdout).toContain('813.05')
  })
})

describe('analyst chat', () => {
  it('answers each line of stdin in one session, keeping variables', async () => {
    const env = await withModel([
      { code: "import pandas as pd\nsales = pd.read_csv('data/sales.csv')\nprint(len(sales))" },
      { content: 'There are 400 orders.' },
      { code: "print(sales['region'].nunique())" },
      { content: 'They come from 4 regions.' },
    ])
    const { code, stdout } = await analyst(['chat', '--data', SALES, '--json'], {
      env,
      input: 'How many orders?\n\nFrom how many regions?\n',
    })
    expect(code).toBe(0)
    const answers = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(answers.map((a) => a.answer)).toEqual(['There are 400 orders.', 'They come from 4 regions.'])
    expect(answers[1].steps[0].execution.error).toBeUndefined()
    expect(answers[0].sessionId).toBe(answers[1].sessionId)
  })
})

describe('history from the command line', () => {
  it('lists, shows, exports and continues a stored session', async () => {
    const env = { ANALYST_HOME: join(dir, 'history-home') }
    const first = await analyst(
      [
        'ask',
        'Average order value by segment?',
        '--data',
        SALES,
        '--replay',
        resolve('examples/demo-replies.json'),
        '--json',
      ],
      { env },
    )
    expect(first.code).toBe(0)
    const { sessionId } = JSON.parse(first.stdout)

    const listed = await analyst(['history', '--json'], { env })
    const sessions = JSON.parse(listed.stdout)
    expect(
      sessions.map((s: { id: string; questions: number; successRate: number }) => [
        s.id,
        s.questions,
        s.successRate,
      ]),
    ).toEqual([[sessionId, 1, 1]])
    const shown = await analyst(['show', sessionId.slice(0, 8)], { env })
    expect(shown.stdout).toContain('Q: Average order value by segment?')
    expect(shown.stdout).toMatch(/3 executions: 3 successful, 0 failed \(100%\)/)

    const exported = await analyst(['export', sessionId, '--format', 'py', '--out', 'session.py'], { env })
    expect(exported.code).toBe(0)
    expect(readFileSync(join(dir, 'session.py'), 'utf8')).toContain("orders = pd.read_csv('data/sales.csv'")

    // A follow-up in the stored session: its cells re-run, so `by_segment` exists again.
    writeFileSync(
      join(dir, 'follow.json'),
      JSON.stringify([
        { code: "print(by_segment.loc['Corporate', 'revenue'])" },
        { text: 'Corporate revenue is 61863.3.' },
      ]),
    )
    const followed = await analyst(
      [
        'ask',
        'Corporate revenue?',
        '--session',
        sessionId.slice(0, 8),
        '--replay',
        join(dir, 'follow.json'),
        '--json',
      ],
      { env },
    )
    expect(followed.code).toBe(0)
    const result = JSON.parse(followed.stdout)
    expect(result.sessionId).toBe(sessionId)
    expect(result.steps[0].execution.logs.stdout).toEqual(['61863.3\n'])
    expect(result.unsupportedNumbers).toEqual([])

    const missing = await analyst(['show', 'nope'], { env })
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('No session nope')
    // Six analyst processes, two of them with a sandbox: minutes on a loaded machine.
  }, 240_000)
})
