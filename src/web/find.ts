/**
 * Find in the session: every match of a text in the runs the page has (questions, the steps'
 * prose, code, output, errors and table headers, answers), in the order the page shows them,
 * whether or not a run is drawn yet (a long session draws its runs as they come near the screen,
 * deferred.tsx, so the browser's own find misses the others); then, once the match's run is
 * drawn, its place on the page, highlighted with the CSS Custom Highlight API.
 * @module
 */
import { PERSON_CELL } from '../server/types.js'
import type { UiRun, UiStep } from './run-state.js'

export type FindPart =
  | 'question'
  | 'prose'
  | 'code'
  | 'stdout'
  | 'stderr'
  | 'result'
  | 'error'
  | 'table'
  | 'answer'

export interface FindMatch {
  /** The run's index in the page's runs. */
  run: number
  /** The step's index in its run's steps (none: the question or the answer). */
  step?: number
  part: FindPart
  /** Which match of the part's text (from 0). */
  nth: number
}

/** How many times `needle` (lower case) is in `text`, case aside, not overlapping. */
function occurrences(text: string, needle: string): number {
  let n = 0
  for (
    let at = text.toLowerCase().indexOf(needle);
    at >= 0;
    at = text.toLowerCase().indexOf(needle, at + needle.length)
  )
    n++
  return n
}

/** A step's texts as the page shows them, in its order. */
function stepTexts(step: UiStep): [FindPart, string][] {
  const texts: [FindPart, string][] = []
  if (step.prose) texts.push(['prose', step.prose])
  texts.push(['code', step.code], ['stdout', step.stdout], ['stderr', step.stderr])
  for (const result of step.results)
    if (!result.image && !result.data && result.text !== undefined) texts.push(['result', result.text])
  if (step.error) texts.push(['error', step.error.traceback || `${step.error.name}: ${step.error.value}`])
  // Each header as a text of its own (the page draws each in its own cell).
  for (const result of step.results)
    if (result.data && !result.image) for (const name of Object.keys(result.data)) texts.push(['table', name])
  return texts
}

/** Every match of `query` in `runs`, in page order; none for an empty query. */
export function findMatches(runs: UiRun[], query: string): FindMatch[] {
  const needle = query.toLowerCase()
  if (!needle.trim()) return []
  const matches: FindMatch[] = []
  const add = (run: number, step: number | undefined, part: FindPart, texts: string[]) => {
    let nth = 0
    for (const text of texts)
      for (let i = occurrences(text, needle); i > 0; i--) matches.push({ run, step, part, nth: nth++ })
  }
  runs.forEach((run, r) => {
    add(r, undefined, 'question', [run.question === PERSON_CELL ? 'You ran a cell' : run.question])
    run.steps.forEach((step, s) => {
      const texts = stepTexts(step)
      for (const part of new Set(texts.map(([p]) => p)))
        add(
          r,
          s,
          part,
          texts.filter(([p]) => p === part).map(([, text]) => text),
        )
    })
    if (run.answer) add(r, undefined, 'answer', [run.answer])
  })
  return matches
}

/** Where each part is drawn, under its run's article or its step's section. */
const PLACES: Record<FindPart, string> = {
  question: ':scope > .question',
  prose: '.prose, .step-summary',
  code: '.step-code .code, .step-code .cm-content',
  stdout: '.output.stdout',
  stderr: '.output.stderr',
  result: '.output.result',
  error: '.output.error',
  table: '.outputs table.data thead th',
  answer: '.answer',
}

/**
 * The drawn elements of a match's part, or null while its run or step is not drawn yet (a stand-in,
 * a closed step).
 */
export function partElements(conversation: Element, match: FindMatch): HTMLElement[] | null {
  const article = conversation.children[match.run]
  if (article?.tagName !== 'ARTICLE') return null
  let root: Element = article
  if (match.step !== undefined) {
    const step = article.querySelectorAll(':scope > .steps > .step')[match.step]
    if (!step) return null
    if (match.part !== 'table' && step.querySelector('.step-head')?.getAttribute('aria-expanded') !== 'true')
      return null
    root = step
  }
  let elements = [...root.querySelectorAll<HTMLElement>(PLACES[match.part])]
  // A step's prose is its summary line, or the whole of it when it has more lines.
  if (match.part === 'prose' && elements.length > 1) elements = elements.filter((e) => e.matches('.prose'))
  return elements
}

/** The `nth` match of `query` in the text of `elements` (each searched on its own), or the last one found. */
export function rangeOf(elements: HTMLElement[], query: string, nth: number): Range | null {
  const needle = query.toLowerCase()
  let seen = 0
  let last: Range | null = null
  for (const element of elements) {
    const nodes: Text[] = []
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT)
    for (let node = walker.nextNode(); node; node = walker.nextNode()) nodes.push(node as Text)
    const text = nodes
      .map((node) => node.data)
      .join('')
      .toLowerCase()
    /** The text node and offset of a place in the element's whole text. */
    const at = (offset: number): [Text, number] => {
      let left = offset
      for (const node of nodes) {
        if (left <= node.data.length) return [node, left]
        left -= node.data.length
      }
      const end = nodes[nodes.length - 1] as Text
      return [end, end.data.length]
    }
    for (let found = text.indexOf(needle); found >= 0; found = text.indexOf(needle, found + needle.length)) {
      const range = document.createRange()
      range.setStart(...at(found))
      range.setEnd(...at(found + needle.length))
      if (seen++ === nth) return range
      last = range
    }
  }
  return last
}

const HIGHLIGHT = 'analyst-find'

/** Highlights `range` (none: clears the highlight) where the browser can. */
export function highlight(range: Range | null): void {
  if (typeof CSS === 'undefined' || !('highlights' in CSS)) return
  if (range) CSS.highlights.set(HIGHLIGHT, new Highlight(range))
  else CSS.highlights.delete(HIGHLIGHT)
}
