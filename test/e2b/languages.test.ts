/**
 * R, JavaScript, TypeScript and bash through the official SDK against `analyst serve`, as E2B's
 * users (and E2B's own tests) call them: `runCode(…, { language })` with no context, contexts made
 * in a language, the default contexts listed, and sandbox-wide environment variables.
 */
import { Sandbox } from '@e2b/code-interpreter'
import { describe, expect, it } from 'vitest'
import { serverWithSandbox } from './server.js'

const served = serverWithSandbox(() => Sandbox.create({ envs: { TEAM: 'sales' } }))

describe('E2B SDK: other languages', () => {
  it("runs R in the sandbox's default R context, with its state and the sandbox's variables", async () => {
    await served.sandbox.runCode('n <- nchar(Sys.getenv("TEAM"))', { language: 'r' })
    const execution = await served.sandbox.runCode('n * 10', { language: 'R' })
    expect(execution.results[0]?.text).toBe('[1] 50')
    const table = await served.sandbox.runCode('data.frame(x = 1:2)', { language: 'r' })
    expect(table.results[0]?.html).toMatch(/<table/)
  })

  it('shows JavaScript and TypeScript values as E2B does (strings without their quotes)', async () => {
    const js = await served.sandbox.runCode('const who = process.env.TEAM; await Promise.resolve(who)', {
      language: 'js',
    })
    expect(js.text).toBe('sales')
    const ts = await served.sandbox.runCode("const n: number = 'sales'.length; n", { language: 'ts' })
    expect(ts.text).toBe('5')
  })

  it('runs bash with its folder and per-run variables, and a failing status as an error', async () => {
    const execution = await served.sandbox.runCode('echo "$GREETING from $(pwd)"; exit 3', {
      language: 'bash',
      envs: { GREETING: 'hi' },
    })
    expect(execution.logs.stdout).toEqual(['hi from /home/user\n'])
    expect(execution.error?.value).toMatch(/exit status 3|stopped/)
  })

  it('makes, lists, restarts and removes contexts in a language, and refuses unknown ones', async () => {
    const context = await served.sandbox.createCodeContext({ language: 'r' })
    expect(context.language).toBe('r')
    await served.sandbox.runCode('z <- 1', { context })
    const languages = (await served.sandbox.listCodeContexts()).map((listed) => listed.language)
    expect(languages).toEqual(expect.arrayContaining(['python', 'javascript', 'r']))
    await served.sandbox.restartCodeContext(context)
    const after = await served.sandbox.runCode('exists("z")', { context })
    expect(after.results[0]?.text).toBe('[1] FALSE')
    await served.sandbox.removeCodeContext(context)
    // The SDK says only the status of a refused request.
    await expect(served.sandbox.runCode('1', { language: 'cobol' })).rejects.toThrow(/400/)
  })
})
