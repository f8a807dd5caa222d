/**
 * Real Python for the guard's tests: which snippets CPython itself refuses to compile, so the
 * corpora hold only code that would really run.
 * @module
 */
import { spawn } from 'node:child_process'

export const PYTHON = '/usr/bin/python3'

const COMPILE_ALL = `
import ast, json, sys
snippets = json.load(sys.stdin)
errors = []
for code in snippets:
    try:
        compile(code, '<cell>', 'exec', ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
        errors.append(None)
    except SyntaxError as error:
        errors.append(f'{error.msg} (line {error.lineno})')
json.dump(errors, sys.stdout)
`

/** For each snippet, CPython's SyntaxError message, or null when it compiles (top-level await allowed, as in the kernel). */
export async function syntaxErrors(snippets: readonly string[]): Promise<Array<string | null>> {
  const child = spawn(PYTHON, ['-c', COMPILE_ALL], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  child.stdin.end(JSON.stringify(snippets))
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', resolve)
  })
  if (code !== 0) throw new Error(`${PYTHON} failed (${code}): ${stderr}`)
  return JSON.parse(stdout) as Array<string | null>
}
