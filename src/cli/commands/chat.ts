import { createInterface } from 'node:readline/promises'
import pc from 'picocolors'
import { ModelCallError } from '../../errors.js'
import { advice } from '../../fixes.js'
import { type AnalysisOptions, startAnalysis } from './ask.js'

/**
 * `analyst chat`: questions in one session, the variables of earlier steps still there. On a TTY
 * a prompt per question; otherwise each line of stdin is a question, answered in order.
 * Exit 0 when every question got an answer, 1 when one ended at the step cap, 2 when a model
 * call failed (that question ends with the reason; the session and its next questions go on).
 */
export async function chat(options: AnalysisOptions): Promise<number> {
  const stdin = options.stdin ?? process.stdin
  const stdout = options.stdout ?? process.stdout
  const stderr = options.stderr ?? process.stderr
  const tty = Boolean((stdin as NodeJS.ReadStream).isTTY)
  const analysis = await startAnalysis(options)
  let incomplete = false
  let modelFailed = false
  const lines = createInterface({
    input: stdin,
    output: tty ? (stdout as NodeJS.WritableStream) : undefined,
    terminal: tty,
  })
  const piped = tty ? undefined : lines[Symbol.asyncIterator]()
  try {
    if (tty)
      stdout.write(pc.dim('Ask a question about your data; an empty line or Ctrl-D ends the session.\n'))
    for (;;) {
      let question: string
      try {
        question = piped ? await nextLine(piped) : await lines.question(pc.bold('\nyou> '))
      } catch {
        break // end of input
      }
      question = question.trim()
      if (!question) {
        if (tty) break
        continue
      }
      if (question === 'exit' || question === 'quit') break
      try {
        const result = await analysis.ask(question)
        incomplete ||= result.incomplete
      } catch (error) {
        if (!ModelCallError.isInstance(error)) throw error
        modelFailed = true
        const what = advice(error, 'cli')
        stderr.write(`analyst: ${error.message}\n${what ? `  ${what}\n` : ''}`)
      }
    }
  } finally {
    lines.close()
    await analysis.close()
  }
  return modelFailed ? 2 : incomplete ? 1 : 0
}

/** The next line of a non-TTY input; rejects at its end. */
async function nextLine(lines: AsyncIterator<string>): Promise<string> {
  const next = await lines.next()
  if (next.done) throw new Error('end of input')
  return next.value
}
