/**
 * The values of Python string literals, decoded as Python decodes them, so that '\x2fetc' and
 * '\N{SOLIDUS}etc' are seen as '/etc'.
 * @module
 */
import type { Node } from 'web-tree-sitter'

/** What the guard knows of a string expression's value. */
export interface StringValue {
  /** The value up to the first f-string interpolation (the whole value when `complete`). */
  value: string
  /** False when an interpolation leaves the rest unknown. */
  complete: boolean
  /** Every literal part, interpolations replaced by U+0000: for searches in the whole text. */
  text: string
}

const SIMPLE_ESCAPES: Record<string, string> = {
  '\n': '',
  '\\': '\\',
  "'": "'",
  '"': '"',
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
}

/** Characters that \N{...} may name in a path or a name; others decode to U+FFFD. */
const NAMED: Record<string, string> = {
  SOLIDUS: '/',
  'REVERSE SOLIDUS': '\\',
  'FULL STOP': '.',
  'LOW LINE': '_',
  TILDE: '~',
  'HYPHEN-MINUS': '-',
  SPACE: ' ',
  COLON: ':',
  'COMMERCIAL AT': '@',
}

function named(name: string): string {
  const upper = name.toUpperCase().trim()
  const letter = /^LATIN (SMALL|CAPITAL) LETTER ([A-Z])$/.exec(upper)
  if (letter?.[1] && letter[2]) return letter[1] === 'SMALL' ? letter[2].toLowerCase() : letter[2]
  const digits = ['ZERO', 'ONE', 'TWO', 'THREE', 'FOUR', 'FIVE', 'SIX', 'SEVEN', 'EIGHT', 'NINE']
  const digit = /^DIGIT ([A-Z]+)$/.exec(upper)
  if (digit?.[1] && digits.includes(digit[1])) return String(digits.indexOf(digit[1]))
  return Object.hasOwn(NAMED, upper) ? (NAMED[upper] as string) : '\uFFFD'
}

/** Decodes the backslash escapes of a non-raw literal's body. */
export function decodeEscapes(body: string, bytes = false): string {
  if (!body.includes('\\')) return body
  return body.replace(
    /\\(?:([\n\\'"abfnrtv])|([0-7]{1,3})|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|N\{([^}]*)\})/g,
    (whole, simple?: string, octal?: string, hex?: string, u4?: string, u8?: string, name?: string) => {
      if (simple !== undefined) return SIMPLE_ESCAPES[simple] ?? whole
      if (octal !== undefined) return String.fromCodePoint(Number.parseInt(octal, 8))
      if (hex !== undefined) return String.fromCodePoint(Number.parseInt(hex, 16))
      // In bytes literals \u, \U and \N are not escapes.
      if (bytes) return whole
      const code = Number.parseInt((u4 ?? u8) as string, 16)
      if (u4 !== undefined || u8 !== undefined)
        return code <= 0x10ffff ? String.fromCodePoint(code) : '\uFFFD'
      return named(name ?? '')
    },
  )
}

/** The value of a `string` or `concatenated_string` node; undefined for any other node. */
export function stringValue(node: Node): StringValue | undefined {
  if (node.type === 'concatenated_string') {
    let value = ''
    let complete = true
    let text = ''
    for (const part of node.namedChildren) {
      const piece = part ? stringValue(part) : undefined
      if (!piece) continue
      if (complete) value += piece.value
      complete &&= piece.complete
      text += piece.text
    }
    return { value, complete, text }
  }
  if (node.type !== 'string') return undefined
  const flags = stringFlags(node)
  let value = ''
  let complete = true
  let text = ''
  for (const child of node.namedChildren) {
    if (!child) continue
    if (child.type === 'string_content') {
      const decoded = decodeContent(child.text, flags)
      if (complete) value += decoded
      text += decoded
    } else if (child.type === 'interpolation') {
      complete = false
      text += '\0'
    }
  }
  return { value, complete, text }
}

export interface StringFlags {
  raw: boolean
  /** f-strings and t-strings: '{{' stands for '{'. */
  fString: boolean
  bytes: boolean
}

/** The prefix letters of a `string` node. */
export function stringFlags(node: Node): StringFlags {
  const start = node.firstChild?.type === 'string_start' ? node.firstChild.text : ''
  const prefix = start.replace(/['"]+$/, '').toLowerCase()
  return {
    raw: prefix.includes('r'),
    fString: prefix.includes('f') || prefix.includes('t'),
    bytes: prefix.includes('b'),
  }
}

/** The value of one `string_content` part of a literal with these flags. */
export function decodeContent(body: string, flags: StringFlags): string {
  const text = flags.fString ? body.replaceAll('{{', '{').replaceAll('}}', '}') : body
  return flags.raw ? text : decodeEscapes(text, flags.bytes)
}

/** True for a string literal with no interpolation: its value is fully known. */
export function isPlainLiteral(node: Node): boolean {
  return stringValue(node)?.complete === true
}
