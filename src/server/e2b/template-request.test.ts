import { describe, expect, it } from 'vitest'
import { debianSuite, readBuildRequest, startCode } from './template-request.js'

const HASH = 'a'.repeat(64)

/** The refusal as an E2B client reads it: the message, then what to do. */
function refusal(read: () => unknown): string {
  try {
    read()
  } catch (error) {
    const { message, hint } = error as { message: string; hint?: string }
    return `${message} ${hint ?? ''}`
  }
  throw new Error('it was not refused')
}

describe("E2B's build request, read into a recipe", () => {
  it('makes Debian bases of debian:<suite>, -slim, numbers and stable; refuses registry images with the bases that work', () => {
    expect(debianSuite('debian:trixie-slim')).toEqual({ suite: 'trixie', slim: true })
    expect(debianSuite('docker.io/library/debian:12')).toEqual({ suite: 'bookworm', slim: false })
    expect(debianSuite('debian:stable')).toEqual({ suite: 'trixie', slim: false })
    expect(debianSuite('debian:buster')).toBeUndefined()
    expect(debianSuite('python:3.12')).toBeUndefined()
    expect(refusal(() => readBuildRequest({ fromImage: 'python:3.12', steps: [] }, ['mine']))).toMatch(
      /python:3\.12" cannot be had here.*Bases that work: fromDebianImage.*a template built here \(mine\)/s,
    )
    expect(() => readBuildRequest({ fromImage: 'e2bdev/base' }, [])).toThrow(/cannot be had here/)
    expect(() =>
      readBuildRequest({ fromImage: 'debian:trixie', fromImageRegistry: { type: 'registry' } }, []),
    ).toThrow(/reaches no registry/)
  })

  it("takes the server's own template and those built here as bases, and no other", () => {
    expect(readBuildRequest({ fromTemplate: 'code-interpreter-v1' }, []).base).toEqual({ kind: 'host' })
    expect(readBuildRequest({ fromTemplate: 'mine:latest' }, ['mine']).base).toEqual({
      kind: 'template',
      name: 'mine',
    })
    expect(() => readBuildRequest({ fromTemplate: 'other' }, ['mine'])).toThrow(/no template "other"/)
  })

  it("lowers each of the SDK's steps to one step of the recipe, in order; a COPY's files sit under their hash", () => {
    const request = readBuildRequest(
      {
        fromImage: 'debian:trixie',
        steps: [
          { type: 'RUN', args: ['apt-get update && apt-get install -y jq', 'root'] },
          { type: 'COPY', args: ['./data.txt', '/opt/data.txt', '', '0644'], filesHash: HASH },
          { type: 'ENV', args: ['A', '1', 'B', 'two'] },
          { type: 'WORKDIR', args: ['/opt'] },
          { type: 'USER', args: ['user'] },
        ],
        startCmd: 'sleep 100',
      },
      [],
    )
    expect(request.base).toEqual({ kind: 'debian', suite: 'trixie', slim: false })
    expect(request.steps).toEqual([
      { type: 'run', command: 'apt-get update && apt-get install -y jq', user: 'root' },
      { type: 'copy', src: `${HASH}/data.txt`, dest: '/opt/data.txt', mode: '0644' },
      { type: 'env', vars: { A: '1', B: 'two' } },
      { type: 'workdir', path: '/opt' },
      { type: 'user', name: 'user' },
    ])
    expect(request.files).toEqual([HASH])
    expect(request.start).toContain("'sleep 100'".replace(/'/g, '"'))
  })

  it('refuses steps it does not know, COPY sources out of the folder, and a COPY without its hash', () => {
    const build = (step: unknown) => () => readBuildRequest({ fromImage: 'debian:trixie', steps: [step] }, [])
    expect(build({ type: 'HEALTHCHECK', args: [] })).toThrow(
      /step 1 \(HEALTHCHECK\).*COPY, ENV, RUN, WORKDIR and USER/,
    )
    expect(build({ type: 'COPY', args: ['../etc', '/x'], filesHash: HASH })).toThrow(
      /inside the build's folder/,
    )
    expect(build({ type: 'COPY', args: ['/etc/passwd', '/x'], filesHash: HASH })).toThrow(/inside/)
    expect(build({ type: 'COPY', args: ['a', '/x'] })).toThrow(/no filesHash/)
    expect(build({ type: 'ENV', args: ['A'] })).toThrow(/pairs/)
  })

  it('runs the start command in the background and waits for the ready command, in Python', () => {
    expect(startCode(undefined, undefined)).toBeUndefined()
    const code = startCode('touch /tmp/started', '[ -f /tmp/started ]') ?? ''
    expect(code).toContain('_sp.Popen')
    expect(code).toContain('while _sp.run')
  })
})
