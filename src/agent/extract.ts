/**
 * Code in a model's plain-text reply (text mode, or a tools-mode model that wrote code instead of
 * calling the tool).
 *
 * What counts: fenced blocks opened by ```python, ```py, ```python3, ```ipython or a bare ```
 * (also with ~~~). Several Python blocks in one reply run together, in order, as one cell: models
 * split one step into blocks with prose between them, and each block usually needs the ones
 * before it. Blocks in another language (sql, bash, r…) do not run; the model is told so.
 * @module
 */

export interface ExtractedCode {
  /** The Python to run, blocks joined in order; undefined when there is none. */
  code?: string
  /** Languages of fenced blocks that are not Python, e.g. ['sql']. */
  otherLanguages: string[]
  /** A fence was opened and never closed: the reply was cut off, or the model forgot it. */
  unterminated: boolean
  /** The prose of the reply, without its code blocks. */
  prose: string
}

const PYTHON = new Set(['', 'python', 'py', 'python3', 'py3', 'ipython', 'pycon'])
/** Info strings of fences that hold output or prose, not code to run. */
const NOT_CODE = new Set([
  'text',
  'txt',
  'output',
  'console',
  'plaintext',
  'markdown',
  'md',
  'csv',
  'json',
  'log',
])

/** `fences`: the info strings whose blocks run (Python's by default; R's for an R analysis). */
export function extractCode(reply: string, fences: ReadonlySet<string> = PYTHON): ExtractedCode {
  const lines = reply.replace(/\r\n?/g, '\n').split('\n')
  const blocks: string[] = []
  const otherLanguages: string[] = []
  const prose: string[] = []
  let open: { fence: string; language: string; body: string[] } | undefined
  for (const line of lines) {
    if (open) {
      const closing = line.trim()
      if (closing.startsWith(open.fence) && closing.replace(/[`~]/g, '') === '') {
        const body = open.body.join('\n')
        if (fences.has(open.language)) {
          if (body.trim() && !(open.language === '' && looksLikeOutput(body))) blocks.push(body)
        } else if (!NOT_CODE.has(open.language)) {
          otherLanguages.push(open.language)
        }
        open = undefined
      } else {
        open.body.push(line)
      }
      continue
    }
    const match = line.match(/^\s{0,3}(`{3,}|~{3,})\s*([\w+.-]*)/)
    if (match) {
      open = { fence: match[1] as string, language: (match[2] ?? '').toLowerCase(), body: [] }
      continue
    }
    prose.push(line)
  }
  const unterminated = open !== undefined
  return {
    code: blocks.length > 0 ? dedentBlocks(blocks).join('\n\n') : undefined,
    otherLanguages: [...new Set(otherLanguages)],
    unterminated,
    prose: prose.join('\n').trim(),
  }
}

/** A bare fence around what the model shows as output (e.g. a printed table), not code. */
function looksLikeOutput(body: string): boolean {
  const text = body.trim()
  if (/^(>>>|\$ )/m.test(text)) return false
  // Python has keywords, calls, assignments or imports; a printed table has none.
  return !/(^|\n)\s*(import |from \w|def |class |for |while |if |with |print\(|[\w.[\]'"]+\s*=[^=]|[\w.]+\()/.test(
    text,
  )
}

/** Strips the indentation a whole block shares (models sometimes indent fenced code). */
function dedentBlocks(blocks: string[]): string[] {
  return blocks.map((block) => {
    const lines = block.split('\n')
    const indents = lines.filter((line) => line.trim()).map((line) => line.match(/^[ \t]*/)?.[0].length ?? 0)
    const shared = Math.min(...indents)
    return shared > 0 ? lines.map((line) => line.slice(shared)).join('\n') : block
  })
}
