import { describe, expect, test } from 'vitest'
import { checkCode, DEFAULT_POLICY, RULE_IDS, warmUp } from './index.js'

describe('checkCode', () => {
  test('reports rule, 1-based line and column, and what to do instead', async () => {
    const violations = await checkCode('import pandas as pd\n\nx = 1; import socket\n')
    expect(violations).toEqual([
      {
        rule: 'network',
        line: 3,
        column: 15,
        message: expect.stringContaining('network is off in the sandbox: read the files under data/'),
      },
    ])
  })

  test('columns count characters, not UTF-8 bytes', async () => {
    const [violation] = await checkCode('données = 1; import socket')
    expect(violation?.column).toBe('données = 1; import '.length + 1)
  })

  test('one report for an import and its uses, not one per use', async () => {
    const violations = await checkCode('import subprocess\nsubprocess.run(["ls"])\nsubprocess.call("id")')
    expect(violations.map((v) => [v.rule, v.line])).toEqual([['process', 1]])
  })

  test('an alias is reported where it is made, each direct use where it is', async () => {
    const aliased = await checkCode(
      'import ctypes\nwindll = ctypes.windll\nwindll.user32.A()\nwindll.user32.B()',
    )
    expect(aliased.map((v) => [v.rule, v.line])).toEqual([['ffi', 1]])
    const viaAlias = await checkCode('run = os.system\nrun("a")\nrun("b")')
    expect(viaAlias.map((v) => [v.rule, v.line])).toEqual([['process', 1]])
    const direct = await checkCode('os.system("a")\nos.system("b")')
    expect(direct.map((v) => [v.rule, v.line])).toEqual([
      ['process', 1],
      ['process', 2],
    ])
  })

  test('a use is reported when the module came from an earlier cell', async () => {
    const violations = await checkCode('os.system("id")')
    expect(violations.map((v) => [v.rule, v.line, v.column])).toEqual([['process', 1, 1]])
  })

  test('a path outside the workspace names the data/ file to use instead', async () => {
    const [violation] = await checkCode("pd.read_csv('/mnt/data/sales.csv')")
    expect(violation?.rule).toBe('path')
    expect(violation?.message).toContain("'data/sales.csv'")
  })

  test('the code given to exec is checked too, at the position of the string', async () => {
    const violations = await checkCode('x = 1\nexec("y = 2\\nimport subprocess")')
    expect(violations).toHaveLength(1)
    expect(violations[0]).toMatchObject({ rule: 'process', line: 2, column: 6 })
    expect(violations[0]?.message).toContain('line 2')
  })

  test('code that does not parse yields no violation of its own', async () => {
    expect(await checkCode('def f(:\n    return')).toEqual([])
    expect(await checkCode('print("unterminated')).toEqual([])
  })

  test('what parses around a syntax error is still checked', async () => {
    const violations = await checkCode('import subprocess\ndef f(:\n    pass')
    expect(violations.map((v) => v.rule)).toContain('process')
  })

  test('names of JavaScript object properties are ordinary Python names', async () => {
    const code = [
      'toString = constructor = valueOf = hasOwnProperty = 1',
      'x.toString(); x.constructor; x.__proto__; valueOf(); __proto__.y',
      'import constructor\nfrom toString import valueOf',
      'open(x.constructor)',
    ].join('\n')
    expect(await checkCode(code)).toEqual([])
  })

  test('warmUp loads the parser and leaves no state behind', async () => {
    await warmUp()
    expect(await checkCode('import socket')).toHaveLength(1)
    expect(await checkCode('x = 1')).toEqual([])
  })

  test('empty code passes', async () => {
    expect(await checkCode('')).toEqual([])
    expect(await checkCode('# just a comment about __globals__ and os.system\n')).toEqual([])
  })

  test('violations come sorted by position', async () => {
    const violations = await checkCode('open("/etc/passwd")\nimport socket\nos.system("id")')
    const positions = violations.map((v) => v.line * 1000 + v.column)
    expect(positions).toEqual([...positions].sort((a, b) => a - b))
    expect(violations.map((v) => v.rule)).toEqual(['path', 'network', 'process'])
  })

  test('every rule id is documented in RULE_IDS', async () => {
    const samples = [
      'import socket',
      'import subprocess',
      'import ctypes',
      '__import__("os")',
      'eval(x)',
      'f.__globals__',
      'sys._getframe()',
      'sys.modules',
      'random._os',
      'getattr(os, name)',
      'open("/etc/passwd")',
    ]
    const found = new Set<string>()
    for (const code of samples) for (const v of await checkCode(code)) found.add(v.rule)
    expect([...found].sort()).toEqual([...RULE_IDS].sort())
  })
})

describe('policy', () => {
  test('the default policy', () => {
    expect(DEFAULT_POLICY).toMatchObject({ allowModules: [], allowNetwork: false, workspace: '/home/user' })
  })

  test('allowModules lets a module and everything under it through', async () => {
    const code = 'import subprocess\nsubprocess.run(["ls"])\nimport socket'
    expect((await checkCode(code, { allowModules: ['subprocess'] })).map((v) => v.rule)).toEqual(['network'])
    expect(await checkCode('import os\nos.system("ls")', { allowModules: ['os.system'] })).toEqual([])
    // Allowing one name does not allow its siblings.
    expect(await checkCode('os.popen("ls")', { allowModules: ['os.system'] })).toHaveLength(1)
  })

  test('allowNetwork lets network modules and URLs through, and nothing else', async () => {
    const code = 'import requests\npd.read_csv("https://example.com/x.csv")\nimport subprocess'
    expect((await checkCode(code)).map((v) => v.rule)).toEqual(['network', 'network', 'process'])
    expect((await checkCode(code, { allowNetwork: true })).map((v) => v.rule)).toEqual(['process'])
  })

  test('ignoreRules skips whole rules', async () => {
    expect(await checkCode('open("/etc/hosts")', { ignoreRules: ['path'] })).toEqual([])
  })

  test('workspace and allowPaths decide which absolute paths pass', async () => {
    expect(await checkCode('open("/srv/work/data/x.csv")')).toHaveLength(1)
    expect(await checkCode('open("/srv/work/data/x.csv")', { workspace: '/srv/work' })).toEqual([])
    expect(await checkCode('open("/home/user/data/x.csv")')).toEqual([])
    expect(await checkCode('open("/tmp/x.csv", "w")')).toEqual([])
    expect(await checkCode('open("/tmp/x.csv", "w")', { allowPaths: [] })).toHaveLength(1)
    expect(await checkCode('open("/opt/shared/x.csv")', { allowPaths: ['/opt/shared'] })).toEqual([])
  })

  test('undefined fields fall back to the defaults', async () => {
    expect(await checkCode('import socket', { allowNetwork: undefined })).toHaveLength(1)
  })
})
