/**
 * IPython's escapes in a cell (`!cmd`, `x = !cmd`, `%magic`, `%%cell magic`), which the kernel
 * runs through IPython's own transformer: the guard sees each as what it does. A shell escape
 * (`!`, `%%bash`, `%sx`…) runs a command, so it is the `process` rule's; the statement of
 * `%time`/`%timeit` (and the body of `%%time`, `%%timeit`, `%%capture`) is Python and is checked
 * as such; other magics (`%matplotlib inline`, `%cd`, `%%html`) are left out of the check.
 *
 * Only lines that tree-sitter could not read as Python are looked at, and only where an escape
 * stands: at the start of a logical line outside any string, or right after `name =`.
 * @module
 */
import type { Node, Tree } from 'web-tree-sitter'

/** Magics that run a shell command (or another program) with their line or their cell. */
const SHELL_MAGICS = new Set([
  'sx',
  'system',
  'bash',
  'sh',
  'script',
  'python',
  'python2',
  'python3',
  'perl',
  'ruby',
  'pip',
  'conda',
  'mamba',
])
/** Magics whose line or cell is Python that runs in the cell's namespace. */
const PYTHON_MAGICS = new Set(['time', 'timeit', 'prun', 'capture'])

/** A shell escape found: where, and what it runs. */
export interface ShellEscape {
  /** 1-based. */
  line: number
  /** 1-based. */
  column: number
  /** The escape as written (`!ls data`, `%%bash`). */
  text: string
}

export interface Escapes {
  /** The cell as Python: each escape's line blanked, or replaced by the statement it times. */
  code: string
  shell: ShellEscape[]
}

/** Whether the node at `position` sits inside a string (an escape character there is text). */
function inString(tree: Tree, row: number, column: number): boolean {
  for (
    let node: Node | null = tree.rootNode.descendantForPosition({ row, column });
    node;
    node = node.parent
  ) {
    if (node.type === 'string' || node.type === 'string_content' || node.type === 'concatenated_string')
      return true
  }
  return false
}

/** The magic's name and what follows it, from `%name rest` or `%%name rest`. */
function magic(text: string): { name: string; rest: string } {
  const body = text.replace(/^%%?/, '')
  const space = body.search(/\s/)
  return space < 0
    ? { name: body, rest: '' }
    : { name: body.slice(0, space), rest: body.slice(space + 1).trim() }
}

/** `%timeit -n 10 -r 3 expr` → `expr`: the options IPython's %time and %timeit take. */
function withoutOptions(rest: string): string {
  const words = rest.split(/\s+/)
  while (words[0]?.startsWith('-')) {
    const option = words.shift() as string
    if (['-n', '-r', '-p', '-s', '-l', '-T', '-D'].includes(option)) words.shift()
  }
  return words.join(' ')
}

/**
 * The escapes of a cell that does not parse cleanly, or undefined when it has none. `tree` is
 * tree-sitter's parse of `code`.
 */
export function ipythonEscapes(code: string, tree: Tree): Escapes | undefined {
  if (!tree.rootNode.hasError) return undefined
  const lines = code.split('\n')
  const shell: ShellEscape[] = []
  let changed = false
  const first = lines.findIndex((line) => line.trim() !== '')
  const firstLine = first >= 0 ? (lines[first] as string) : ''
  // A cell magic: its first line names it, the rest of the cell is its body.
  if (firstLine.trimStart().startsWith('%%') && !inString(tree, first, firstLine.indexOf('%'))) {
    const { name } = magic(firstLine.trim())
    if (SHELL_MAGICS.has(name))
      shell.push({ line: first + 1, column: firstLine.indexOf('%') + 1, text: firstLine.trim() })
    const keepsBody = PYTHON_MAGICS.has(name)
    return {
      code: lines.map((line, index) => (index === first || !keepsBody ? '' : line)).join('\n'),
      shell,
    }
  }
  const out = lines.map((line, row) => {
    const indent = line.length - line.trimStart().length
    const assigned = /^\s*[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*(?=[!%])/.exec(line)
    const at = assigned ? assigned[0].length : indent
    const mark = line[at]
    if ((mark !== '!' && mark !== '%') || line[at + 1] === '=' || inString(tree, row, at)) return line
    const written = line.slice(at).trim()
    changed = true
    if (mark === '!') {
      shell.push({ line: row + 1, column: at + 1, text: written })
      return ''
    }
    const { name, rest } = magic(written)
    if (SHELL_MAGICS.has(name)) {
      shell.push({ line: row + 1, column: at + 1, text: written })
      return ''
    }
    // The timed statement stands where the magic stood, at the line's indentation.
    return PYTHON_MAGICS.has(name) ? `${line.slice(0, indent)}${withoutOptions(rest)}` : ''
  })
  return changed ? { code: out.join('\n'), shell } : undefined
}
