import { describe, expect, it } from 'vitest'
import { extractCode } from './extract.js'

describe('extractCode', () => {
  it('finds python, py, python3 and bare fences, with prose around them', () => {
    for (const fence of ['```python', '```py', '```python3', '```', '~~~py', '````python']) {
      const close = fence.match(/^[`~]+/)?.[0]
      const reply = `Let me look.\n${fence}\nprint(df.head())\n${close}\nThat shows the first rows.`
      expect(extractCode(reply), fence).toMatchObject({ code: 'print(df.head())', unterminated: false })
      expect(extractCode(reply).prose).toBe('Let me look.\nThat shows the first rows.')
    }
  })

  it('joins several python blocks in order', () => {
    const { code } = extractCode('```python\na = 1\n```\nthen\n```python\nprint(a)\n```')
    expect(code).toBe('a = 1\n\nprint(a)')
  })

  it('reports other languages and does not run them', () => {
    expect(extractCode('```sql\nSELECT 1\n```')).toMatchObject({ code: undefined, otherLanguages: ['sql'] })
    expect(extractCode('```bash\npip install x\n```\n```r\nmean(x)\n```').otherLanguages).toEqual([
      'bash',
      'r',
    ])
  })

  it('does not take shown output (text fences, a bare fence around a printed table) for code', () => {
    expect(extractCode('```text\n   a  b\n0  1  2\n```').code).toBeUndefined()
    expect(extractCode('Result:\n```\n   segment  mean\n0  A       1.5\n```').code).toBeUndefined()
  })

  it('flags an unterminated fence', () => {
    expect(extractCode('```python\nprint(1)')).toMatchObject({ code: undefined, unterminated: true })
  })

  it('strips indentation that a whole block shares, and handles CRLF', () => {
    expect(extractCode('```python\r\n    x = 1\r\n    print(x)\r\n```').code).toBe('x = 1\nprint(x)')
  })

  it('finds no code in a plain answer', () => {
    expect(extractCode('The mean is 4.2.')).toEqual({
      code: undefined,
      otherLanguages: [],
      unterminated: false,
      prose: 'The mean is 4.2.',
    })
  })
})
