/**
 * The Python parser: tree-sitter-python's WASM grammar on the web-tree-sitter runtime. Both .wasm
 * files ship inside their npm packages, so parsing works offline. Loaded once, on first use.
 * @module
 */
import { createRequire } from 'node:module'
import { Language, Parser, type Tree } from 'web-tree-sitter'

let loading: Promise<Parser> | undefined

async function load(): Promise<Parser> {
  const require = createRequire(import.meta.url)
  await Parser.init()
  const python = await Language.load(require.resolve('tree-sitter-python/tree-sitter-python.wasm'))
  const parser = new Parser()
  parser.setLanguage(python)
  return parser
}

/** The shared parser, initialised on the first call (about 30 ms); a failed start is retried next time. */
export function pythonParser(): Promise<Parser> {
  loading ??= load().catch((error: unknown) => {
    loading = undefined
    throw error
  })
  return loading
}

/**
 * Parses Python source. The caller must `delete()` the tree: it lives in WASM memory.
 * Parsing is synchronous once the parser is loaded, so one parser serves concurrent callers.
 */
export async function parsePython(code: string): Promise<Tree> {
  const parser = await pythonParser()
  const tree = parser.parse(code)
  if (!tree) throw new Error('tree-sitter returned no tree') // only on cancellation, which we never request
  return tree
}
