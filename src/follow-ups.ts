/**
 * Follow-ups: up to three short questions a person might ask next, which the model writes at the
 * end of its final answer, in the same reply (no extra model call), under a last "Follow-ups:"
 * line. The agent takes them off the answer's text; the store keeps them the same way, as that
 * block at the end of the stored answer, so that they need no column of their own (no migration)
 * and a reader that knows nothing of them still reads the model's own words.
 * @module
 */

export const MAX_FOLLOW_UPS = 3
/** A question longer than this is no short suggestion: it is cut at a word. */
const MAX_CHARS = 160

/** "Follow-ups:", "**Follow-up questions:**", "Suggested follow-ups:", "## Follow-ups" … */
const HEADING =
  /^\s*(?:#{1,6}\s*)?(?:\*\*|__)?\s*(?:suggested\s+)?follow[- ]?ups?(?:\s+questions?)?\s*:?\s*(?:\*\*|__)?\s*:?\s*$/i
const ITEM = /^\s*(?:[-*+•]|\d+[.)])\s+(.+?)\s*$/

export interface SplitAnswer {
  answer: string
  followUps: string[]
}

function clean(item: string): string {
  const text = item
    .replace(/^(?:\*\*|__|["“])+|(?:\*\*|__|["”])+$/g, '')
    .replace(/\s+/g, ' ')
    .trim()
  if (text.length <= MAX_CHARS) return text
  const cut = text.slice(0, MAX_CHARS)
  return `${cut.slice(0, Math.max(cut.lastIndexOf(' '), MAX_CHARS / 2))}…`
}

/**
 * The answer without its follow-ups, and them (at most three). Only a list that ends the text,
 * under its heading, counts: a "follow-up" in the middle of an answer stays where it is.
 */
export function splitFollowUps(text: string): SplitAnswer {
  const lines = text.replace(/\r\n?/g, '\n').trimEnd().split('\n')
  let end = lines.length
  const items: string[] = []
  while (end > 0 && ITEM.test(lines[end - 1] as string)) {
    items.unshift((ITEM.exec(lines[end - 1] as string)?.[1] ?? '') as string)
    end--
  }
  // A blank line may stand between the heading and its list.
  let heading = end - 1
  while (heading >= 0 && (lines[heading] as string).trim() === '') heading--
  if (items.length === 0 || heading < 0 || !HEADING.test(lines[heading] as string))
    return { answer: text, followUps: [] }
  const followUps = [...new Set(items.map(clean).filter(Boolean))].slice(0, MAX_FOLLOW_UPS)
  return { answer: lines.slice(0, heading).join('\n').trimEnd(), followUps }
}

/** The answer with its follow-ups after it, as the store keeps them (splitFollowUps reads them back). */
export function joinFollowUps(answer: string, followUps: readonly string[] = []): string {
  if (followUps.length === 0) return answer
  return `${answer}\n\nFollow-ups:\n${followUps.map((question) => `- ${question}`).join('\n')}`
}
