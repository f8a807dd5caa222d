import { describe, expect, it } from 'vitest'
import { tokenize } from './tokenize.js'

const split = (text: string, final = true) => tokenize(text, { delimiter: ',', final }).records

describe('tokenize', () => {
  it('splits fields and records, with \\n, \\r\\n and \\r line ends', () => {
    expect(split('a,b\n1,2\n')).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ])
    expect(split('a,b\r\n1,2\r\n')).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ])
    expect(split('a,b\r1,2\r3,4')).toEqual([
      ['a', 'b'],
      ['1', '2'],
      ['3', '4'],
    ])
  })

  it('keeps delimiters, doubled quotes and line breaks inside quoted fields', () => {
    expect(split('"a,b","say ""hi""","x\ny"\n')).toEqual([['a,b', 'say "hi"', 'x\ny']])
    expect(tokenize('"x\ny",1\n', { delimiter: ',' }).quotedNewlines).toBe(true)
  })

  it('treats a quote inside an unquoted field as text, and joins text after a closing quote', () => {
    expect(split('5\'11",x\n"ab"cd,y\n')).toEqual([
      ['5\'11"', 'x'],
      ['abcd', 'y'],
    ])
  })

  it('skips blank and whitespace-only lines but keeps leading spaces of a record', () => {
    expect(split('\n\na\n\n  \n\t\n  1\n')).toEqual([['a'], ['  1']])
  })

  it('keeps empty fields, at the end of a line too', () => {
    expect(split('a,,\n,1,\n')).toEqual([
      ['a', '', ''],
      ['', '1', ''],
    ])
    expect(split('a,b\n1,')).toEqual([
      ['a', 'b'],
      ['1', ''],
    ])
  })

  it('reports where a quote never closes', () => {
    const result = tokenize('a\n"open\n1\n', { delimiter: ',' })
    expect(result.records).toEqual([['a']])
    expect(result.unterminatedQuoteAt).toBe(2)
  })

  it('drops a record cut by the end of a chunk and says where the whole ones end', () => {
    const result = tokenize('a,b\n1,2\n3,', { delimiter: ',', final: false })
    expect(result.records).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ])
    expect(result.consumed).toBe(8)
  })

  it('counts file lines as pandas does, blank lines and quoted breaks included', () => {
    expect(tokenize('\na\n"x\ny"\nz\n', { delimiter: ',' }).lines).toEqual([2, 3, 5])
  })

  it('stops after maxRecords', () => {
    expect(tokenize('1\n2\n3\n', { delimiter: ',', maxRecords: 2 }).records).toEqual([['1'], ['2']])
  })
})
