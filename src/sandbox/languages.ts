/**
 * The languages a sandbox's contexts run, by E2B's names, and how a caller's word for one is read
 * (`js` and `ts` as E2B's server reads them, any case, around spaces).
 * @module
 */
import type { Language } from './backend.js'
import { InvalidArgumentError } from './errors.js'

export const LANGUAGES: readonly Language[] = ['python', 'r', 'javascript', 'typescript', 'bash']

const ALIASES: Record<string, Language> = { js: 'javascript', ts: 'typescript', py: 'python', sh: 'bash' }

/** How people name each language in a sentence. */
export const LANGUAGE_NAMES: Record<Language, string> = {
  python: 'Python',
  r: 'R',
  javascript: 'JavaScript',
  typescript: 'TypeScript',
  bash: 'bash',
}

/** A caller's word for a language (undefined: Python), or a clear error naming those there are. */
export function normalizeLanguage(language: string | null | undefined): Language {
  if (language === undefined || language === null || language.trim() === '') return 'python'
  const word = language.trim().toLowerCase()
  const known = ALIASES[word] ?? (LANGUAGES as readonly string[]).find((name) => name === word)
  if (!known) {
    throw new InvalidArgumentError(`No ${language} kernel in Analyst's sandboxes`, {
      hint: `The languages are ${LANGUAGES.join(', ')} (js and ts for short).`,
    })
  }
  return known as Language
}
