/**
 * The answer, in the little Markdown models write (paragraphs, lists, headings, tables, **bold**,
 * `code`), built as elements: nothing is parsed as HTML. Numbers that no output of the code
 * contains are marked.
 */
import type { ComponentChild } from 'preact'
import { ScrollBox } from './scroll-box.js'

const UNSUPPORTED_TITLE = 'Not found in any output of the code: check it before you rely on it'

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** Splits text around the unsupported numbers, marking each (not inside a longer number). */
function markNumbers(text: string, numbers: string[], key: string): ComponentChild[] {
  const wanted = [...new Set(numbers.filter(Boolean))].sort((a, b) => b.length - a.length)
  if (wanted.length === 0) return [text]
  const pattern = new RegExp(`(?<![\\w.,])(${wanted.map(escapeRegExp).join('|')})(?![\\w]|[.,]\\d)`, 'g')
  const parts: ComponentChild[] = []
  let last = 0
  for (const match of text.matchAll(pattern)) {
    const index = match.index ?? 0
    if (index > last) parts.push(text.slice(last, index))
    parts.push(
      <mark key={`${key}-${index}`} class="unsupported" title={UNSUPPORTED_TITLE}>
        {match[0]}
      </mark>,
    )
    last = index + match[0].length
  }
  if (last < text.length) parts.push(text.slice(last))
  return parts
}

/** **bold**, *em*, `code`, and the number marks. */
function inline(text: string, numbers: string[], key: string): ComponentChild[] {
  const parts: ComponentChild[] = []
  const pattern = /`([^`]+)`|\*\*([^*]+)\*\*|__([^_]+)__|(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])/g
  let last = 0
  let n = 0
  for (const match of text.matchAll(pattern)) {
    const index = match.index ?? 0
    if (index > last) parts.push(...markNumbers(text.slice(last, index), numbers, `${key}-${n++}`))
    const k = `${key}-i${n++}`
    if (match[1] !== undefined) parts.push(<code key={k}>{match[1]}</code>)
    else if (match[2] !== undefined || match[3] !== undefined)
      parts.push(<strong key={k}>{markNumbers(match[2] ?? match[3] ?? '', numbers, k)}</strong>)
    else parts.push(<em key={k}>{markNumbers(match[4] ?? '', numbers, k)}</em>)
    last = index + match[0].length
  }
  if (last < text.length) parts.push(...markNumbers(text.slice(last), numbers, `${key}-${n}`))
  return parts
}

const LIST_ITEM = /^\s*(?:[-*+]|\d+[.)])\s+/
const TABLE_RULE = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/

function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((cell) => cell.trim())
}

export function Markdown({ text, numbers = [] }: { text: string; numbers?: string[] }) {
  const lines = text.replace(/\r\n?/g, '\n').split('\n')
  const blocks: ComponentChild[] = []
  let i = 0
  while (i < lines.length) {
    const line = lines[i] as string
    const key = `b${i}`
    if (line.trim() === '') {
      i++
      continue
    }
    if (line.trim().startsWith('```')) {
      const body: string[] = []
      i++
      while (i < lines.length && !(lines[i] as string).trim().startsWith('```'))
        body.push(lines[i++] as string)
      i++
      blocks.push(
        <ScrollBox key={key} class="plain" pre>
          {body.join('\n')}
        </ScrollBox>,
      )
      continue
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line)
    if (heading) {
      blocks.push(
        <h4 key={key} class="answer-heading">
          {inline(heading[2] ?? '', numbers, key)}
        </h4>,
      )
      i++
      continue
    }
    if (line.includes('|') && TABLE_RULE.test(lines[i + 1] ?? '')) {
      const head = cells(line)
      i += 2
      const rows: string[][] = []
      while (i < lines.length && (lines[i] as string).includes('|') && (lines[i] as string).trim() !== '')
        rows.push(cells(lines[i++] as string))
      blocks.push(
        <ScrollBox key={key} class="table-wrap">
          <table class="data">
            <thead>
              <tr>
                {head.map((cell, c) => (
                  <th key={c}>{inline(cell, numbers, `${key}h${c}`)}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((row, r) => (
                <tr key={r}>
                  {row.map((cell, c) => (
                    <td key={c}>{inline(cell, numbers, `${key}r${r}c${c}`)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollBox>,
      )
      continue
    }
    if (LIST_ITEM.test(line)) {
      const ordered = /^\s*\d/.test(line)
      const items: string[] = []
      while (i < lines.length && (lines[i] as string).trim() !== '') {
        const current = lines[i] as string
        if (LIST_ITEM.test(current)) items.push(current.replace(LIST_ITEM, ''))
        else items[items.length - 1] += ` ${current.trim()}`
        i++
      }
      const children = items.map((item, n) => <li key={n}>{inline(item, numbers, `${key}l${n}`)}</li>)
      blocks.push(ordered ? <ol key={key}>{children}</ol> : <ul key={key}>{children}</ul>)
      continue
    }
    const paragraph: string[] = []
    while (
      i < lines.length &&
      (lines[i] as string).trim() !== '' &&
      !LIST_ITEM.test(lines[i] as string) &&
      !/^#{1,6}\s/.test(lines[i] as string) &&
      !(lines[i] as string).trim().startsWith('```')
    )
      paragraph.push((lines[i++] as string).trim())
    if (paragraph.length === 0) {
      // a line no block takes (e.g. a lone table row): show it as text
      paragraph.push((lines[i++] as string).trim())
    }
    blocks.push(<p key={key}>{inline(paragraph.join(' '), numbers, key)}</p>)
  }
  return <div class="markdown">{blocks}</div>
}
