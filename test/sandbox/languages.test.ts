/**
 * R, JavaScript, TypeScript and bash contexts on the local engine: each language's kernel in the
 * sandbox's jail (started by the Python kernel), its state across cells, its output, errors,
 * results and interrupts, and R's sql() against a real source on the host. One sandbox for all.
 */
import { resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider, Sandbox } from '../../src/index.js'

let provider: LocalProvider
let sandbox: Sandbox

beforeAll(async () => {
  provider = new LocalProvider({ poolSize: 0 })
  sandbox = await Sandbox.create({
    provider,
    envs: { SANDBOX_LEVEL: 'sandbox-wide' },
    sources: { sales: resolve('examples/sales.csv') },
  })
})

afterAll(async () => {
  await sandbox?.kill()
  await provider?.close()
})

describe('R', () => {
  it('keeps state, prints, and shows the last value as R prints it', async () => {
    await sandbox.runCode('x <- 21; f <- function(n) n * 2', { language: 'r' })
    const execution = await sandbox.runCode('cat("hello\\n"); f(x)', { language: 'r' })
    expect(execution.logs.stdout).toEqual(['hello\n'])
    expect(execution.results).toMatchObject([{ text: '[1] 42', isMainResult: true }])
  })

  it("gives an error with R's call stack", async () => {
    const execution = await sandbox.runCode(
      'g <- function() stop("no such column"); h <- function() g(); h()',
      {
        language: 'r',
      },
    )
    expect(execution.error).toMatchObject({ value: 'no such column' })
    expect(execution.error?.traceback).toMatch(/Error in g\(\): no such column[\s\S]*1\. h\(\)\n2\. g\(\)/)
  })

  it('shows a data.frame as a table (text, html, data) and plots as PNGs', async () => {
    const table = await sandbox.runCode('data.frame(region = c("North", "South"), total = c(1.5, 2))', {
      language: 'r',
    })
    expect(table.results[0]).toMatchObject({ data: { region: ['North', 'South'], total: [1.5, 2] } })
    expect(table.results[0]?.html).toMatch(/<table/)
    expect(table.results[0]?.text).toMatch(/North\s+1\.5/)
    const plots = await sandbox.runCode(
      'plot(1:10)\nlibrary(ggplot2)\nggplot(data.frame(a = 1:3, b = 3:1), aes(a, b)) + geom_line()',
      { language: 'r' },
    )
    expect(plots.error).toBeUndefined()
    const pngs = plots.results.map((result) =>
      Buffer.from(result.png ?? '', 'base64')
        .subarray(1, 4)
        .toString(),
    )
    expect(pngs).toEqual(['PNG', 'PNG'])
  })

  it('is interrupted at its timeout and keeps its variables', async () => {
    const stopped = await sandbox.runCode('y <- 7; Sys.sleep(30)', { language: 'r', timeoutMs: 1500 })
    expect(stopped.error?.name).toBe('TimeoutError')
    const after = await sandbox.runCode('y + x', { language: 'r' })
    expect(after.results[0]?.text).toBe('[1] 28')
  })

  it("sql() returns a data.frame from the host's source", async () => {
    const execution = await sandbox.runCode(
      'd <- sql("SELECT region, count(*) AS orders, sum(order_value) AS value FROM sales GROUP BY region ORDER BY region")\nprint(class(d)); print(sapply(d, class)); nrow(d)',
      { language: 'r' },
    )
    expect(execution.error).toBeUndefined()
    expect(execution.logs.stdout.join('')).toMatch(
      /"data.frame"[\s\S]*region\s+orders\s+value\s*\n\s*"character"\s+"(integer|numeric)"\s+"numeric"/,
    )
    expect(execution.results[0]?.text).toBe('[1] 4')
    expect(execution.queries).toMatchObject([{ source: 'sales', rows: 4 }])
  })
})

describe('JavaScript and TypeScript', () => {
  it('keeps declarations across cells, with ESM imports, top-level await and the last value', async () => {
    await sandbox.runCode("import { join } from 'node:path'\nconst base = await Promise.resolve('data')", {
      language: 'js',
    })
    const execution = await sandbox.runCode("console.log(process.cwd()); join(base, 'sales.csv')", {
      language: 'javascript',
    })
    expect(execution.logs.stdout).toEqual(['/home/user\n'])
    expect(execution.results).toMatchObject([{ text: "'data/sales.csv'", isMainResult: true }])
  })

  it('strips TypeScript types, and reports errors with their stack', async () => {
    const typed = await sandbox.runCode('interface P { x: number }\nconst p: P = { x: 2 }\np.x * 21', {
      language: 'ts',
    })
    expect(typed.results[0]?.text).toBe('42')
    const failed = await sandbox.runCode('function boom() { throw new TypeError("bad") }\nboom()', {
      language: 'js',
    })
    expect(failed.error).toMatchObject({ name: 'TypeError', value: 'bad' })
    expect(failed.error?.traceback).toMatch(/at boom/)
  })

  it('sees the sandbox-wide and per-run environment variables', async () => {
    const execution = await sandbox.runCode('[process.env.SANDBOX_LEVEL, process.env.RUN_ONLY]', {
      language: 'js',
      envs: { RUN_ONLY: 'this-run' },
    })
    expect(execution.results[0]?.text).toBe("[ 'sandbox-wide', 'this-run' ]")
    const later = await sandbox.runCode('process.env.RUN_ONLY ?? "unset"', { language: 'js' })
    expect(later.results[0]?.text).toBe("'unset'")
  })

  it('is interrupted while it awaits and while it loops, and keeps its state', async () => {
    const waiting = await sandbox.runCode('await new Promise((r) => setTimeout(r, 30000))', {
      language: 'js',
      timeoutMs: 1000,
    })
    expect(waiting.error?.name).toBe('TimeoutError')
    const looping = await sandbox.runCode('for (;;) {}', { language: 'js', timeoutMs: 1000 })
    expect(looping.error?.name).toBe('TimeoutError')
    expect((await sandbox.runCode('base', { language: 'js' })).results[0]?.text).toBe("'data'")
  })
})

describe('bash', () => {
  it('keeps variables and the working folder, gives stderr, and a failing status as an error', async () => {
    await sandbox.runCode('COUNT=3; mkdir -p sub && cd sub', { language: 'bash' })
    const execution = await sandbox.runCode('echo "$COUNT in $(pwd)"; echo oops >&2; false', {
      language: 'bash',
    })
    expect(execution.logs.stdout).toEqual(['3 in /home/user/sub\n'])
    expect(execution.logs.stderr).toEqual(['oops\n'])
    expect(execution.error).toMatchObject({ value: 'exit status 1' })
  })

  it('is interrupted at its timeout and keeps its state', async () => {
    const stopped = await sandbox.runCode('sleep 30; echo not-here', { language: 'bash', timeoutMs: 1000 })
    expect(stopped.error?.name).toBe('TimeoutError')
    expect(stopped.logs.stdout).toEqual([])
    const after = await sandbox.runCode('echo $COUNT', { language: 'bash' })
    expect(after.logs.stdout).toEqual(['3\n'])
  })
})

describe('a context that ignores interrupts', () => {
  it('is restarted alone at its timeout, saying so; the Python state and the sandbox stay', async () => {
    await sandbox.runCode('kept_in_python = 41')
    const bash = await sandbox.createCodeContext({ language: 'bash' })
    await sandbox.runCode('LOST=1', { context: bash })
    const stopped = await sandbox.runCode("trap '' INT; sleep 1000", { context: bash, timeoutMs: 1000 })
    expect(stopped.error).toMatchObject({
      name: 'TimeoutError',
      value: expect.stringMatching(
        /The bash context did not stop within 1 s of the interrupt.*variables are lost/,
      ),
    })
    expect((await sandbox.runCode('kept_in_python + 1')).text).toBe('42')
    // bash's default-value expansion, not a JavaScript template.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: bash code
    const fresh = await sandbox.runCode('echo "[${LOST:-gone}]"', { context: bash })
    expect(fresh.logs.stdout).toEqual(['[gone]\n'])
  })
})

describe('contexts', () => {
  it('are independent, each in its language, and refuse a language Analyst has no kernel for', async () => {
    const context = await sandbox.createCodeContext({ language: 'r' })
    expect(context.language).toBe('r')
    const fresh = await sandbox.runCode('exists("x")', { context })
    expect(fresh.results[0]?.text).toBe('[1] FALSE')
    await expect(sandbox.runCode('1', { language: 'cobol' })).rejects.toThrow(/No cobol kernel/)
    await expect(sandbox.runCode('1', { language: 'r', context })).rejects.toThrow(/not both/)
  })
})
