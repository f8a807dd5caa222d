import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { countRecords } from './count.js'
import { tokenize } from './tokenize.js'

const dir = mkdtempSync(join(tmpdir(), 'analyst-count-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function count(text: string, delimiter = ','): Promise<number> {
  const path = join(dir, 'x.csv')
  writeFileSync(path, text)
  return countRecords(path, delimiter)
}

describe('countRecords', () => {
  const cases: Record<string, string> = {
    plain: 'a,b\n1,2\n3,4\n',
    'no final newline': 'a,b\n1,2\n3,4',
    crlf: 'a,b\r\n1,2\r\n',
    'blank and whitespace lines': '\n\na,b\n\n1,2\n   \n\t\n3,4\n\n',
    'quoted line breaks': 'a,b\n"x\ny",1\n"p\n\nq",2\n',
    'doubled quotes': 'a\n"say ""hi\n"" now"\n2\n',
    'quote inside a field': 'a,b\n5\'11",x\n6\'0",y\n',
    'text after a closing quote': 'a,b\n"x"y,1\n"p",2\n',
    'quote after leading spaces': 'a,b\n  "x,1\n2,3\n',
    'tab-only line with tab separator': 'a\tb\n\t\n1\t2\n',
  }
  for (const [name, text] of Object.entries(cases)) {
    it(`agrees with the tokenizer: ${name}`, async () => {
      const delimiter = name.includes('tab separator') ? '\t' : ','
      expect(await count(text, delimiter)).toBe(tokenize(text, { delimiter }).records.length)
    })
  }

  it('agrees with the tokenizer across buffer boundaries', async () => {
    // Records long enough that quotes and line ends fall on both sides of 4 MiB boundaries.
    const parts: string[] = ['id,text\n']
    for (let i = 0; i < 120_000; i++)
      parts.push(
        i % 3 === 0
          ? `${i},"multi\nline, ""quoted"" ${'x'.repeat(i % 50)}"\n`
          : `${i},${'y'.repeat(i % 40)}\n`,
      )
    const text = parts.join('')
    expect(text.length).toBeGreaterThan(4 * 1024 * 1024)
    expect(await count(text)).toBe(tokenize(text, { delimiter: ',' }).records.length)
  })
})
