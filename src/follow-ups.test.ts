import { describe, expect, it } from 'vitest'
import { joinFollowUps, splitFollowUps } from './follow-ups.js'

describe('follow-ups at the end of an answer', () => {
  it('takes the list under a last "Follow-ups:" line off the answer, in the forms models write it', () => {
    for (const heading of [
      'Follow-ups:',
      '**Follow-ups:**',
      'Suggested follow-ups:',
      '## Follow-up questions',
      'Follow ups',
    ]) {
      expect(
        splitFollowUps(`Revenue is 12 M.\n\n${heading}\n- Which region grew most?\n2. By month?`),
      ).toEqual({
        answer: 'Revenue is 12 M.',
        followUps: ['Which region grew most?', 'By month?'],
      })
    }
  })

  it('keeps three at most, each short and once; leaves an answer without them as it is', () => {
    const long = `Why ${'very '.repeat(60)}much?`
    const { followUps } = splitFollowUps(`A.\nFollow-ups:\n- one?\n- one?\n- **two?**\n- ${long}\n- four?`)
    expect(followUps.slice(0, 2)).toEqual(['one?', 'two?'])
    expect(followUps).toHaveLength(3)
    expect((followUps[2] as string).length).toBeLessThanOrEqual(161)
    // A list that is part of the answer, or a heading in the middle, is no follow-up.
    for (const text of ['Top regions:\n- East\n- West', 'Follow-ups:\n- a?\n\nThat is all.', 'Plain answer.'])
      expect(splitFollowUps(text)).toEqual({ answer: text, followUps: [] })
  })

  it('reads back what it stores', () => {
    const stored = joinFollowUps('The answer:\n- 1\n- 2', ['Next?', 'And then?'])
    expect(splitFollowUps(stored)).toEqual({
      answer: 'The answer:\n- 1\n- 2',
      followUps: ['Next?', 'And then?'],
    })
    expect(joinFollowUps('Only this.', [])).toBe('Only this.')
  })
})
