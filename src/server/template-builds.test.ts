import { describe, expect, it } from 'vitest'
import { NotFoundError } from '../errors.js'
import { BuildElsewhereError, TemplateBuilds } from './template-builds.js'

describe('template builds on several replicas', () => {
  it("says a build runs on another replica (421, what to route), and an unknown one of this replica's is a 404", async () => {
    const a = new TemplateBuilds({ allowed: true, replica: 'host-a:1:x' })
    const b = new TemplateBuilds({ allowed: true, replica: 'host-b:2:y' })
    let finish: () => void = () => {}
    const build = a.start(
      'team',
      null,
      () => new Promise((_, reject) => (finish = () => reject(new Error('stopped')))),
    )
    expect(build.id).toMatch(/^[0-9a-f-]{36}-[0-9a-f]{8}$/)
    expect(a.get(build.id, null).name).toBe('team')
    let elsewhere: unknown
    try {
      b.get(build.id, null)
    } catch (error) {
      elsewhere = error
    }
    expect(BuildElsewhereError.isInstance(elsewhere)).toBe(true)
    expect(elsewhere).toMatchObject({
      status: 421,
      message: expect.stringContaining('runs on another replica'),
      hint: expect.stringContaining('session affinity'),
    })
    const unknown = a.newId()
    expect(() => a.get(unknown, null)).toThrow(NotFoundError)
    expect(() => a.get('not-an-id', null)).toThrow(/No template build not-an-id/)
    a.cancel(build.id, null)
    finish()
  })
})
