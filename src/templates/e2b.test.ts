import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { e2bBuildBody } from '../../test/templates/e2b-body.js'
import { lowerE2BBuild } from './e2b.js'

describe("E2B's Template builder, lowered to a recipe's steps", () => {
  it('takes what the SDK sends: apt and pip as RUN, COPY by its files hash, ENV, WORKDIR, USER', async () => {
    const context = mkdtempSync(join(tmpdir(), 'analyst-e2b-template-'))
    writeFileSync(join(context, 'hello.txt'), 'hello\n')
    const body = await e2bBuildBody(
      (t) =>
        t
          .fromDebianImage('trixie')
          .aptInstall(['python3-six'])
          .pipInstall('tinypkg==0.1.0')
          .copy('hello.txt', '/opt/data/')
          .setEnvs({ A: '1' })
          .setWorkdir('/home/user')
          .setUser('user')
          .runCmd('echo hi'),
      context,
    )
    const hash = body.steps?.find((step) => step.type === 'COPY')?.filesHash as string
    expect(hash).toMatch(/^[0-9a-f]{64}$/)
    const recipe = lowerE2BBuild(body, '/uploads')
    expect(recipe.base).toEqual({ kind: 'debian', suite: 'trixie', slim: false })
    expect(recipe.context).toBe('/uploads')
    expect(recipe.steps).toEqual([
      {
        type: 'run',
        command:
          'apt-get update && DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes apt-get install -y python3-six',
        user: 'root',
      },
      { type: 'run', command: 'pip install tinypkg==0.1.0', user: 'root' },
      { type: 'copy', src: `${hash}/hello.txt`, dest: '/opt/data/' },
      { type: 'env', vars: { A: '1' } },
      { type: 'workdir', path: '/home/user' },
      { type: 'user', name: 'user' },
      { type: 'run', command: 'echo hi' },
    ])
  })

  it("maps E2B's own templates to the host's Python, others to templates built here, and refuses the rest", () => {
    expect(lowerE2BBuild({ fromTemplate: 'code-interpreter-v1' }, '/u').base).toEqual({ kind: 'host' })
    expect(lowerE2BBuild({ fromTemplate: 'modern' }, '/u').base).toEqual({ kind: 'template', name: 'modern' })
    expect(lowerE2BBuild({ fromImage: 'debian:bookworm-slim', force: true }, '/u')).toMatchObject({
      base: { kind: 'debian', suite: 'bookworm', slim: true },
      force: true,
    })
    expect(() =>
      lowerE2BBuild({ steps: [{ type: 'COPY', args: ['../x', '/y'], filesHash: 'a'.repeat(64) }] }, '/u'),
    ).toThrow(/outside the template's file context/)
    expect(() => lowerE2BBuild({ steps: [{ type: 'EXPOSE', args: ['80'] }] }, '/u')).toThrow(
      /EXPOSE is not a step/,
    )
  })
})
