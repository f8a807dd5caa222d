/**
 * The benchmark's own scoring (InfiAgent-DABench, eval_closed_form.py): sub-answers are read from
 * the final answer with `@(\w+)\[(.*?)\]` (the last one of a name counts); one is right when its
 * text equals the label's or both read as numbers within 1e-6. Three scores, each from 0 to 1:
 *
 * - ABQ, accuracy by question: the share of questions whose sub-answers are all right;
 * - PSAQ, proportional accuracy by sub-question: the mean, over questions, of the share right;
 * - UASQ, uniform accuracy by sub-question: the share right over all sub-answers.
 *
 * One deliberate difference: every question counts. The original script leaves out questions that
 * got no response at all, which flatters a model that crashes; here a crash scores zero.
 * @module
 */

export interface SubAnswer {
  name: string
  expected: string
  /** What the answer gave for this name; null when it gave none. */
  got: string | null
  correct: boolean
}

export interface Scores {
  questions: number
  abq: number
  psaq: number
  uasq: number
}

/** Python's `\w` matches Unicode letters and digits too, not only ASCII. */
const ANSWER = /@([\p{L}\p{N}_]+)\[(.*?)\]/gu

/** Each `@name[value]` of the text; a name given twice keeps its last value (as `dict(zip(...))` does). */
export function extractAnswers(text: string): Map<string, string> {
  const answers = new Map<string, string>()
  for (const match of text.matchAll(ANSWER)) answers.set(match[1] as string, match[2] as string)
  return answers
}

const PYTHON_FLOAT =
  /^[+-]?(?:(?:\d(?:_?\d)*)?\.\d(?:_?\d)*|\d(?:_?\d)*\.?)(?:[eE][+-]?\d(?:_?\d)*)?$|^[+-]?(?:inf|infinity|nan)$/i

/** The number Python's `float()` reads from the text, or undefined where it raises. */
export function pythonFloat(text: string): number | undefined {
  const trimmed = text.trim()
  if (!PYTHON_FLOAT.test(trimmed)) return undefined
  const lower = trimmed.toLowerCase().replace(/_/g, '')
  if (lower.endsWith('nan')) return Number.NaN
  if (lower.endsWith('inf') || lower.endsWith('infinity'))
    return lower.startsWith('-') ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY
  return Number(lower)
}

/** The benchmark's `is_equal`: the same text, or two numbers less than 1e-6 apart. */
export function isEqual(got: string | null | undefined, expected: string): boolean {
  if (got === null || got === undefined) return false
  if (got === expected) return true
  const a = pythonFloat(got)
  const b = pythonFloat(expected)
  return a !== undefined && b !== undefined && Math.abs(a - b) < 1e-6
}

/** Each expected sub-answer, with what the answer gave and whether it is right. */
export function scoreAnswer(answer: string, expected: Array<[string, string]>): SubAnswer[] {
  const given = extractAnswers(answer)
  return expected.map(([name, value]) => {
    const got = given.get(name) ?? null
    return { name, expected: value, got, correct: isEqual(got, value) }
  })
}

/** A question is right when it has sub-answers and all of them are. */
export function allRight(subAnswers: SubAnswer[]): boolean {
  return subAnswers.length > 0 && subAnswers.every((sub) => sub.correct)
}

/** ABQ, PSAQ and UASQ over these questions (0 for none). */
export function computeScores(items: Array<{ subAnswers: SubAnswer[] }>): Scores {
  let right = 0
  let proportional = 0
  let subRight = 0
  let subTotal = 0
  for (const { subAnswers } of items) {
    const correct = subAnswers.filter((sub) => sub.correct).length
    if (allRight(subAnswers)) right++
    if (subAnswers.length > 0) proportional += correct / subAnswers.length
    subRight += correct
    subTotal += subAnswers.length
  }
  const questions = items.length
  return {
    questions,
    abq: questions ? right / questions : 0,
    psaq: questions ? proportional / questions : 0,
    uasq: subTotal ? subRight / subTotal : 0,
  }
}

const LEVELS = ['easy', 'medium', 'hard']

/** The scores of each group (a question may be in several, as with concepts), groups in a stable order. */
export function scoresBy<T extends { subAnswers: SubAnswer[] }>(
  items: T[],
  groups: (item: T) => string[],
): Record<string, Scores> {
  const members = new Map<string, T[]>()
  for (const item of items) {
    for (const group of groups(item)) members.set(group, [...(members.get(group) ?? []), item])
  }
  const order = (name: string) => {
    const level = LEVELS.indexOf(name)
    return level >= 0 ? level : LEVELS.length
  }
  const names = [...members.keys()].sort((a, b) => order(a) - order(b) || a.localeCompare(b))
  return Object.fromEntries(names.map((name) => [name, computeScores(members.get(name) ?? [])]))
}
