/**
 * A JavaScript or TypeScript cell as the JavaScript kernel runs it (languages/analyst_kernel.mjs),
 * made on the host: types stripped (sucrase), then, with the real parser (acorn), ESM imports made
 * dynamic, top-level declarations made globals (so that they outlive the cell, as in a REPL and
 * E2B's JavaScript context), and the last expression's value returned, all in an async function
 * so that top-level await works. Line numbers stay those of the cell.
 * @module
 */
import { createRequire } from 'node:module'
import { type Node, parse } from 'acorn'

/** The cell is not valid JavaScript (or TypeScript): the error the caller reports. */
export class CellSyntaxError extends Error {
  override readonly name = 'SyntaxError'
}

interface Range {
  start: number
  end: number
}
type AnyNode = Node & Record<string, unknown>

/** Cells longer than this are refused before parsing (the parser runs on the host). */
const MAX_CELL_CHARS = 2_000_000

export function toKernelScript(code: string, language: 'javascript' | 'typescript'): string {
  if (code.length > MAX_CELL_CHARS)
    throw new CellSyntaxError(`The cell is longer than ${MAX_CELL_CHARS} characters`)
  const source = language === 'typescript' ? stripTypes(code) : code
  let program: AnyNode
  try {
    program = parse(source, {
      ecmaVersion: 'latest',
      sourceType: 'module',
      allowAwaitOutsideFunction: true,
      allowHashBang: true,
    }) as unknown as AnyNode
  } catch (error) {
    throw new CellSyntaxError((error as Error).message)
  }
  const names = new Set<string>()
  const edits: Array<Range & { text: string }> = []
  const functions: string[] = []
  const body = program.body as AnyNode[]
  body.forEach((statement, index) => {
    const last = index === body.length - 1
    rewriteStatement(source, statement, last, { names, edits, functions })
  })
  // Dynamic import() anywhere resolves as a static one does: from the working folder.
  walk(program, (node) => {
    if (node.type === 'ImportExpression')
      edits.push({ start: node.start, end: node.start + 6, text: '__analyst_import' })
  })
  // From the end, so that offsets hold. At one offset: a replacement first, then the insertions,
  // the one made last first (so that they read in the order they were made).
  const ordered = edits
    .map((edit, index) => ({ ...edit, index }))
    .sort((a, b) => b.start - a.start || b.end - b.start - (a.end - a.start) || b.index - a.index)
  let rewritten = source
  for (const edit of ordered)
    rewritten = rewritten.slice(0, edit.start) + edit.text + rewritten.slice(edit.end)
  const declared = names.size > 0 ? `var ${[...names].join(', ')}; ` : ''
  // Function declarations are hoisted in the wrapper; made globals first, as a script's are.
  const hoisted = functions.map((name) => `globalThis.${name} = ${name}; `).join('')
  return `${declared}(async () => { ${hoisted}${rewritten}\n})()`
}

/**
 * sucrase, loaded with the first TypeScript cell: its 0.4 CPU-s went into every start of the CLI,
 * the server and each test file that imports the sandbox, most of which never run TypeScript.
 */
let sucrase: typeof import('sucrase') | undefined

function stripTypes(code: string): string {
  sucrase ??= createRequire(import.meta.url)('sucrase') as typeof import('sucrase')
  try {
    return sucrase.transform(code, {
      transforms: ['typescript'],
      disableESTransforms: true,
      keepUnusedImports: true,
    }).code
  } catch (error) {
    throw new CellSyntaxError((error as Error).message)
  }
}

interface Rewrite {
  names: Set<string>
  edits: Array<Range & { text: string }>
  functions: string[]
}

/**
 * The edits that make one top-level statement a part of the cell's function. Each is small (a
 * keyword out, parentheses in), so that they never overlap one another or the import() renames.
 */
function rewriteStatement(source: string, statement: AnyNode, last: boolean, rewrite: Rewrite) {
  const { names, edits, functions } = rewrite
  const insert = (at: number, text: string) => edits.push({ start: at, end: at, text })
  let node = statement
  // `export` means nothing in a cell: its declaration stays.
  if (node.type === 'ExportNamedDeclaration' || node.type === 'ExportDefaultDeclaration') {
    const declaration = node.declaration as AnyNode | null
    if (!declaration || !/Declaration$/.test(declaration.type)) return
    edits.push({ start: node.start, end: declaration.start, text: '' })
    node = declaration
  }
  switch (node.type) {
    case 'ImportDeclaration': {
      const from = `await __analyst_import(${source.slice((node.source as AnyNode).start, (node.source as AnyNode).end)})`
      const parts: string[] = []
      for (const specifier of node.specifiers as AnyNode[]) {
        const local = (specifier.local as AnyNode).name as string
        names.add(local)
        if (specifier.type === 'ImportDefaultSpecifier') parts.push(`${local} = __analyst_module.default`)
        else if (specifier.type === 'ImportNamespaceSpecifier') parts.push(`${local} = __analyst_module`)
        else {
          const imported = specifier.imported as AnyNode
          const key = imported.type === 'Literal' ? String(imported.value) : (imported.name as string)
          parts.push(`${local} = __analyst_module[${JSON.stringify(key)}]`)
        }
      }
      const text = parts.length ? `{ const __analyst_module = ${from}; ${parts.join('; ')}; }` : `${from};`
      return edits.push({ start: node.start, end: node.end, text })
    }
    case 'VariableDeclaration': {
      // `const a = 1, { b } = o` → `(a = 1), ({ b } = o)`: assignments to the globals declared first.
      // Semicolons on both sides: a declaration ends a line by itself, an expression would not.
      const declarators = node.declarations as AnyNode[]
      edits.push({ start: node.start, end: (declarators[0] as AnyNode).start, text: ';' })
      for (const declarator of declarators) {
        collectNames(declarator.id as AnyNode, names)
        insert(declarator.start, '(')
        insert(declarator.end, ')')
      }
      return insert(node.end, ';')
    }
    case 'ClassDeclaration': {
      const name = (node.id as AnyNode).name as string
      names.add(name)
      insert(node.start, `;${name} = `)
      return insert(node.end, ';')
    }
    case 'FunctionDeclaration':
      return functions.push((node.id as AnyNode).name as string)
    case 'ExpressionStatement': {
      if (!last || statement !== node) return
      const expression = node.expression as AnyNode
      insert(expression.start, 'return [(')
      return insert(expression.end, ')]')
    }
  }
}

/** The names a declaration's pattern binds: `a`, `{ b, c: d }`, `[e, ...f]`, defaults. */
function collectNames(pattern: AnyNode, names: Set<string>) {
  switch (pattern.type) {
    case 'Identifier':
      names.add(pattern.name as string)
      return
    case 'ObjectPattern':
      for (const property of pattern.properties as AnyNode[]) {
        collectNames((property.type === 'RestElement' ? property.argument : property.value) as AnyNode, names)
      }
      return
    case 'ArrayPattern':
      for (const element of pattern.elements as Array<AnyNode | null>)
        if (element) collectNames(element, names)
      return
    case 'RestElement':
      return collectNames(pattern.argument as AnyNode, names)
    case 'AssignmentPattern':
      return collectNames(pattern.left as AnyNode, names)
  }
}

function walk(node: AnyNode, visit: (node: AnyNode) => void) {
  visit(node)
  for (const value of Object.values(node)) {
    if (Array.isArray(value)) {
      for (const child of value) if (child && typeof child.type === 'string') walk(child, visit)
    } else if (value && typeof (value as AnyNode).type === 'string') walk(value as AnyNode, visit)
  }
}
