import { describe, expect, test } from 'vitest'
import { checkCode } from './check.js'

/** Each violation as rule@line:column. */
async function found(code: string, policy: Parameters<typeof checkCode>[1] = {}) {
  return (await checkCode(code, policy)).map((v) => `${v.rule}@${v.line}:${v.column}`)
}

describe("IPython's escapes in the guard", () => {
  test('a shell escape is a command run, wherever it stands in the cell', async () => {
    expect(await found('!ls data')).toEqual(['process@1:1'])
    expect(await found('import pandas as pd\nfiles = !ls data\nprint(files)')).toEqual(['process@2:9'])
    expect(await found('for i in range(3):\n    !echo {i}')).toEqual(['process@2:5'])
    expect(await found('%%bash\nls /etc')).toEqual(['process@1:1'])
    expect(await found('%sx ls')).toEqual(['process@1:1'])
    const [violation] = await checkCode('!curl example.com')
    expect(violation?.message).toContain("!curl example.com (IPython's shell escape)")
  })

  test('the Python of %time and %timeit is checked as Python; other magics are left out', async () => {
    expect(await found('%time import socket')).toEqual(['network@1:8'])
    expect(await found('%%timeit -n 3\nimport socket')).toEqual(['network@2:8'])
    expect(await found('%timeit -n 10 -r 3 df.sum()')).toEqual([])
    expect(await found('%matplotlib inline\n%cd data\nimport pandas as pd\npd.read_csv("x.csv")')).toEqual([])
    expect(await found('%%html\n<b>import socket</b>')).toEqual([])
  })

  test('text that only looks like an escape is Python: strings, the modulo operator', async () => {
    expect(await found('s = """\n!rm -rf data\n%%bash\n"""\nprint(s)')).toEqual([])
    expect(await found('x = 7 % 2\ny = x != 1')).toEqual([])
  })

  test('a policy that lets processes run lets shell escapes run', async () => {
    expect(await found('!ls', { allowModules: ['subprocess'] })).toEqual([])
    expect(await found('!ls', { ignoreRules: ['process'] })).toEqual([])
  })
})
