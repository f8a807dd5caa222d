import { describe, expect, it } from 'vitest'
import { parseContainerfile } from './containerfile.js'

describe('Containerfiles lowered to steps', () => {
  it('turns FROM, RUN, COPY, ADD, ENV, ARG, WORKDIR and USER into the same steps as a spec', () => {
    const recipe = parseContainerfile(
      [
        '# syntax=docker/dockerfile:1',
        'ARG SUITE=trixie',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a Containerfile's own ${ARG}, not JavaScript's.
        'FROM debian:${SUITE}-slim',
        'LABEL org.example.team="data"',
        'ARG LEVEL=2',
        'ENV A=1 B="two words"',
        'RUN apt-get update && \\',
        '    apt-get install -y python3-tabulate',
        'RUN ["python3", "-c", "print(\'hi\')"]',
        'COPY --chown=user:user --chmod=755 a.txt b/ /opt/x/',
        'ADD lib.tar /opt/',
        'WORKDIR /home/user',
        'USER user',
        'CMD ["bash"]',
      ].join('\n'),
      '/ctx',
    )
    expect(recipe.base).toEqual({ kind: 'debian', suite: 'trixie', slim: true })
    expect(recipe.steps).toEqual([
      { type: 'env', vars: { LEVEL: '2' } },
      { type: 'env', vars: { A: '1', B: 'two words' } },
      { type: 'run', command: 'apt-get update &&     apt-get install -y python3-tabulate' },
      { type: 'run', command: "python3 -c 'print('\\''hi'\\'')'" },
      { type: 'copy', src: 'a.txt', dest: '/opt/x/', user: 'user:user', mode: '755' },
      { type: 'copy', src: 'b/', dest: '/opt/x/', user: 'user:user', mode: '755' },
      { type: 'copy', src: 'lib.tar', dest: '/opt/' },
      { type: 'workdir', path: '/home/user' },
      { type: 'user', name: 'user' },
    ])
  })

  it.each([
    ['RUN true\n', /no FROM line/],
    ['FROM debian:trixie AS a\nFROM a\n', /multi-stage builds are not supported/],
    ['FROM debian:trixie\nCOPY --from=a /x /y\n', /--from needs another stage/],
    ['FROM debian:trixie\nADD https://example.org/x.tgz /opt/\n', /line 2: ADD .*a URL cannot be fetched/],
    ['FROM debian:trixie\nCOPY *.txt /opt/\n', /wildcards are not supported/],
    ['FROM debian:trixie\nONBUILD RUN true\n', /line 2: ONBUILD is not supported/],
    ['FROM debian:trixie\nWORKDIR relative\n', /not an absolute path/],
  ])('refuses what it cannot honour: %j', (text, message) => {
    expect(() => parseContainerfile(text, '/ctx')).toThrow(message)
  })

  it('says how to do without stages, in a FROM line that names a template as this parser reads one', () => {
    for (const text of ['FROM debian:trixie AS a\nFROM a\n', 'FROM debian:trixie\nCOPY --from=a /x /y\n']) {
      let hint = ''
      try {
        parseContainerfile(text, '/ctx')
      } catch (error) {
        hint = (error as { hint?: string }).hint ?? ''
      }
      const from = hint.match(/FROM \S+?(?=\.?$)/)?.[0]
      expect(from, hint).toBe('FROM template:first')
      expect(parseContainerfile(`${from}\n`, '/ctx').base).toEqual({ kind: 'template', name: 'first' })
    }
  })

  it('keeps an image it does not know as an image base (checked against local storage at build time)', () => {
    expect(parseContainerfile('FROM python:3.12\n', '/ctx').base).toEqual({
      kind: 'image',
      image: 'python:3.12',
    })
    expect(parseContainerfile('FROM template:modern\n', '/ctx').base).toEqual({
      kind: 'template',
      name: 'modern',
    })
  })
})
