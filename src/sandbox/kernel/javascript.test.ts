import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { CellSyntaxError, toKernelScript } from './javascript.js'

/** Runs cells one after another in one fresh global, as the kernel does; returns each cell's [value]. */
async function runCells(cells: string[], language: 'javascript' | 'typescript' = 'javascript') {
  const global: Record<string, unknown> = {
    __analyst_import: (name: string) => import(name),
    console,
  }
  global.globalThis = global
  const values: unknown[] = []
  for (const cell of cells) values.push(await runInNewContext(toKernelScript(cell, language), global))
  return values
}

describe('toKernelScript', () => {
  it('keeps top-level declarations, imports and functions across cells, and returns the last value', async () => {
    const values = await runCells([
      "import { join } from 'node:path'\nimport * as os from 'node:os'\nconst { a, b: [c] } = { a: 1, b: [2] }\nlet d = await Promise.resolve(3)\nfunction f() { return a + c + d }\nclass G { g() { return 'g' } }",
      "f() + (typeof os.cpus) + join('x', 'y') + new G().g()",
      'const a = 10; a',
    ])
    expect(values).toEqual([undefined, ['6functionx/yg'], [10]])
  })

  it('returns the value of a top-level await and nothing after a statement', async () => {
    expect(await runCells(["await Promise.resolve('Hello World!')", 'const x = 1'])).toEqual([
      ['Hello World!'],
      undefined,
    ])
  })

  it('strips TypeScript types and keeps imports that are only used as values', async () => {
    const values = await runCells(
      [
        "import { sep } from 'node:path'\ninterface Point { x: number }\ntype Name = string\nconst p: Point = { x: 2 }\nconst n: Name = 'n';\n(p.x as number) + n",
      ],
      'typescript',
    )
    expect(values).toEqual([['2n']])
  })

  it('reports a cell that does not parse as a SyntaxError with its place', () => {
    expect(() => toKernelScript('1 +', 'javascript')).toThrow(CellSyntaxError)
    expect(() => toKernelScript('const x: = 1', 'typescript')).toThrow(CellSyntaxError)
  })
})
