/** Python source for a string, as `repr` would write it (for `readCall`s and hints). */
export function py(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'"
  let out = ''
  for (const char of text) {
    const code = char.codePointAt(0) as number
    if (char === '\\') out += '\\\\'
    else if (char === quote) out += `\\${quote}`
    else if (char === '\n') out += '\\n'
    else if (char === '\r') out += '\\r'
    else if (char === '\t') out += '\\t'
    else if (code < 32 || code === 127) out += `\\x${code.toString(16).padStart(2, '0')}`
    else out += char
  }
  return `${quote}${out}${quote}`
}

/** `name(first, key=value, …)` with the keyword arguments that are set, in order. */
export function call(name: string, first: string, keywords: [string, string | undefined][]): string {
  const args = [
    first,
    ...keywords.filter(([, value]) => value !== undefined).map(([key, value]) => `${key}=${value}`),
  ]
  return `${name}(${args.join(', ')})`
}

/** 1234567 → '1,234,567'. (toLocaleString loads ICU's locale data: tens of milliseconds on first use.) */
export function thousands(n: number): string {
  const [whole, fraction] = String(n).split('.')
  const grouped = (whole as string).replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  return fraction === undefined ? grouped : `${grouped}.${fraction}`
}
