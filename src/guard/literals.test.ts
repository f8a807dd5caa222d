import { describe, expect, test } from 'vitest'
import { decodeEscapes, stringValue } from './literals.js'
import { parsePython } from './parser.js'

async function literalValue(literal: string) {
  const tree = await parsePython(`x = ${literal}\n`)
  try {
    const right = tree.rootNode.namedChild(0)?.namedChild(0)?.childForFieldName('right')
    return right ? stringValue(right) : undefined
  } finally {
    tree.delete()
  }
}

describe('decodeEscapes', () => {
  test.each([
    ['\\x2fetc\\x2fpasswd', '/etc/passwd'],
    ['\\057etc', '/etc'],
    ['\\u002fetc', '/etc'],
    ['\\U0000002fetc', '/etc'],
    ['\\N{SOLIDUS}etc\\N{LATIN SMALL LETTER X}\\N{DIGIT SEVEN}', '/etcx7'],
    ['\\N{low line}\\N{LOW LINE}', '__'],
    ["a\\tb\\\\c\\'d", "a\tb\\c'd"],
    ['line\\\ncontinued', 'linecontinued'],
    ['\\q', '\\q'],
  ])('%s', (body, expected) => {
    expect(decodeEscapes(body)).toBe(expected)
  })

  test('bytes literals know no \\u or \\N escapes', () => {
    expect(decodeEscapes('\\u002f\\x2f', true)).toBe('\\u002f/')
  })
})

describe('stringValue', () => {
  test.each([
    ["'plain'", { value: 'plain', complete: true }],
    ["r'\\x2f'", { value: '\\x2f', complete: true }],
    ["b'\\x2fetc'", { value: '/etc', complete: true }],
    ["'/etc/' 'passwd'", { value: '/etc/passwd', complete: true }],
    ["f'/etc/{name}.csv'", { value: '/etc/', complete: false }],
    ["f'{{literal}}'", { value: '{literal}', complete: true }],
    ["'''triple\nquoted'''", { value: 'triple\nquoted', complete: true }],
    ["F'{a}{b}'", { value: '', complete: false }],
    ["rb'\\x41' B'\\x41'", { value: '\\x41A', complete: true }],
  ])('%s', async (literal, expected) => {
    expect(await literalValue(literal)).toMatchObject(expected)
  })

  test('text keeps every literal part of an f-string', async () => {
    expect((await literalValue("f'{a}.__glo{b}bals__'"))?.text).toBe('\0.__glo\0bals__')
  })
})
