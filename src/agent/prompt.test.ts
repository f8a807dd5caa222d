import { describe, expect, it } from 'vitest'
import { sourcesSection, systemPrompt } from './prompt.js'

describe('the system prompt', () => {
  it("names the template's language, Python and main packages with their versions", () => {
    const prompt = systemPrompt({
      mode: 'tools',
      dataDescription: '',
      environment: {
        template: 'modern',
        languages: ['python'],
        python: '3.13.5',
        packages: { pandas: '2.2.3', numpy: '2.2.4' },
      },
    })
    expect(prompt).toContain('A stateful Python 3.13.5 kernel (the template "modern")')
    expect(prompt).toContain('Installed: pandas 2.2.3, numpy 2.2.4. Write code for these versions.')
    expect(prompt).not.toContain('scikit-learn and statsmodels are installed')
  })

  it('describes the default stack without a template', () => {
    const prompt = systemPrompt({ mode: 'tools', dataDescription: '' })
    expect(prompt).toContain('A stateful Python 3 kernel')
    expect(prompt).toContain('scikit-learn and statsmodels are installed')
  })
})

describe('sourcesSection', () => {
  it("says sql() in the session's language: R's NULL and data.frame, Python's None and DataFrame", () => {
    const r = sourcesSection('(tables)', 'r')
    expect(r).toContain(
      'sql(query, source = NULL, params = NULL) runs one read-only SQL statement and returns a data.frame',
    )
    expect(r).toContain('pull small results into R')
    expect(r).not.toMatch(/None|pandas/)
    expect(sourcesSection('(tables)')).toContain('sql(query, source=None, params=None)')
  })
})
