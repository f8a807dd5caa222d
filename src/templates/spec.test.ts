import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { InvalidArgumentError } from '../errors.js'
import { isContainerfileName, loadRecipe, parseSpec } from './spec.js'

describe('template spec files', () => {
  it('lowers every key to steps, in the order env, apt, pip, files, run, workdir', () => {
    const recipe = parseSpec(
      [
        'name: team',
        'base: debian:bookworm-slim',
        'workdir: /home/user/work',
        'run: [python3 -m compileall /opt/lib]',
        'files: [{ src: lib/, dest: /opt/lib, mode: "0755" }]',
        'pip:',
        '  packages: ["polars>=1.0", duckdb]',
        '  requirements: requirements.txt',
        '  index-url: http://127.0.0.1:9/simple',
        '  find-links: wheels',
        'apt: [python3-tabulate]',
        'env: { TZ: UTC, LEVEL: 3 }',
        'start: import pandas',
      ].join('\n'),
      '/ctx',
    )
    expect(recipe).toMatchObject({
      name: 'team',
      base: { kind: 'debian', suite: 'bookworm', slim: true },
      context: '/ctx',
      start: 'import pandas',
      pip: { indexUrl: 'http://127.0.0.1:9/simple', findLinks: ['/ctx/wheels'] },
    })
    expect(recipe.steps).toEqual([
      { type: 'env', vars: { TZ: 'UTC', LEVEL: '3' } },
      {
        type: 'run',
        command:
          'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-tabulate',
      },
      { type: 'copy', src: 'requirements.txt', dest: '/opt/analyst-build/requirements-1-requirements.txt' },
      { type: 'run', command: 'pip install -r /opt/analyst-build/requirements-1-requirements.txt' },
      { type: 'run', command: "pip install 'polars>=1.0' duckdb" },
      { type: 'copy', src: 'lib/', dest: '/opt/lib', mode: '0755' },
      { type: 'run', command: 'python3 -m compileall /opt/lib' },
      { type: 'workdir', path: '/home/user/work' },
    ])
  })

  it.each([
    ['base: debian:trixie\napt: [1, 2]\n', /apt/],
    ['apt: [x]\n', /base: say what the template starts from/],
    ['base: debian:trixie\npackages: [x]\n', /unknown key packages/],
    ['base: debian:trixie\nfiles: [{ src: a, dest: relative/b }]\n', /files\.0\.dest: an absolute path/],
    ['base: debian:trixie\nenv: { "1BAD": x }\n', /env.*environment variable name/],
    ['base: debian:potato\n', /not a suite Debian's archive serves/],
    ['base: [oops\n', /not valid YAML or JSON/],
    ['- just a list\n', /not a template spec/],
  ])('says what to fix in %j', (text, message) => {
    expect(() => parseSpec(text, '/ctx', 'team.yaml')).toThrow(message)
    expect(() => parseSpec(text, '/ctx')).toThrow(InvalidArgumentError)
  })

  it("carries each sandbox's default memory and cores, and refuses a size that is none", () => {
    expect(parseSpec('base: host\nmemory: 300M\ncpus: 1.5', '/ctx').resources).toEqual({
      memoryBytes: 300 * 1024 ** 2,
      milliCpus: 1500,
    })
    expect(parseSpec('base: host', '/ctx').resources).toBeUndefined()
    expect(() => parseSpec('base: host\nmemory: lots', '/ctx')).toThrow(/memory: a size such as 512M or 2G/)
    expect(() => parseSpec('base: host\ncpus: 0', '/ctx')).toThrow(/cpus: a number of cores/)
  })

  it('reads JSON too, and tells a Containerfile from a spec by its name or its first line', () => {
    expect(parseSpec('{"base": "host", "pip": ["tinypkg==0.1"]}', '/ctx').steps).toEqual([
      { type: 'run', command: 'pip install tinypkg==0.1' },
    ])
    const dir = mkdtempSync(join(tmpdir(), 'analyst-spec-'))
    writeFileSync(join(dir, 'tools.txt'), '# tools\nFROM debian:trixie\nRUN true\n')
    expect(loadRecipe(join(dir, 'tools.txt')).steps).toEqual([{ type: 'run', command: 'true' }])
    expect(isContainerfileName('/a/Containerfile')).toBe(true)
    expect(isContainerfileName('/a/Dockerfile.dev')).toBe(true)
    expect(isContainerfileName('/a/modern.yaml')).toBe(false)
    expect(() => loadRecipe(join(dir, 'nothing.yaml'))).toThrow(/Cannot read the template spec .*ENOENT/)
  })
})
