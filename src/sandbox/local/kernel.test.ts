import { describe, expect, it } from 'vitest'
import { startHint } from './kernel.js'

describe('startHint', () => {
  it('says how to enable user namespaces when bubblewrap cannot create them', () => {
    expect(startHint('bwrap: setting up uid map: Permission denied').hint).toMatch(
      /unprivileged_userns_clone/,
    )
    expect(startHint('bwrap: No permissions to creating new namespace').fix).toEqual({ setting: 'isolation' })
  })

  it('names the package when the sandbox Python lacks a module', () => {
    expect(startHint("ModuleNotFoundError: No module named 'pandas'").hint).toMatch(
      /apt-get install python3-pandas/,
    )
  })

  it('has nothing to add for other failures', () => {
    expect(startHint('something else')).toEqual({})
  })
})
