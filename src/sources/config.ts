/**
 * The named sources of `analyst serve`: a JSON file, named by ANALYST_SOURCES, that maps each name
 * to a URL, the environment variable that holds its password and the tokens that may use it. Users
 * pick sources by name and never see a URL or a password.
 * @module
 */
import { readFileSync } from 'node:fs'
import { z } from 'zod'
import { InvalidArgumentError } from '../errors.js'
import { parseSource, type SourceSpec } from './spec.js'

const entrySchema = z.strictObject({
  url: z.string().min(1, 'the url is empty'),
  passwordEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'passwordEnv must be the name of an environment variable')
    .optional(),
  tokens: z.array(z.string().min(1)).optional(),
})

const fileSchema = z.record(
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a source name must be letters, digits and _'),
  entrySchema,
)

export interface NamedSource {
  spec: SourceSpec
  /** The tokens that may use it; undefined: every token. */
  tokens?: string[]
}

/** Parses the sources file's text; `where` names the file in messages. */
export function parseSourcesFile(
  text: string,
  env: NodeJS.ProcessEnv = process.env,
  where = 'ANALYST_SOURCES',
): Map<string, NamedSource> {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new InvalidArgumentError(`${where} is not valid JSON: ${(error as Error).message}`, {
      hint: 'Write it as {"NAME": {"url": "postgres://USER@HOST/DB", "passwordEnv": "VAR", "tokens": ["…"]}}.',
    })
  }
  const parsed = fileSchema.safeParse(json)
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const path = issue.path.length > 0 ? issue.path.map(String).join('.') : '(the whole file)'
      return `${path}: ${issue.message}`
    })
    throw new InvalidArgumentError(`${where} is not a valid sources file: ${problems.join('; ')}`, {
      hint: 'Each key is a source name, each value {"url": "…", "passwordEnv": "VAR", "tokens": ["…"]}.',
    })
  }
  const sources = new Map<string, NamedSource>()
  for (const [name, entry] of Object.entries(parsed.data)) {
    let spec: SourceSpec
    try {
      spec = parseSource(entry.url, env)
    } catch (error) {
      if (InvalidArgumentError.isInstance(error)) {
        throw new InvalidArgumentError(`${where}, source "${name}": ${error.message}`, { hint: error.hint })
      }
      throw error
    }
    if (entry.passwordEnv) {
      const password = env[entry.passwordEnv]
      if (password === undefined) {
        throw new InvalidArgumentError(`${where}, source "${name}": ${entry.passwordEnv} is not set`, {
          hint: `Set ${entry.passwordEnv} in the environment of the server to the source's password.`,
        })
      }
      spec = { ...spec, password }
    }
    sources.set(name, { spec: { ...spec, name }, ...(entry.tokens ? { tokens: entry.tokens } : {}) })
  }
  return sources
}

/** Reads the file named by ANALYST_SOURCES; an empty map when it is not set. */
export function loadSourcesFile(env: NodeJS.ProcessEnv = process.env): Map<string, NamedSource> {
  const path = env.ANALYST_SOURCES
  if (!path) return new Map()
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new InvalidArgumentError(
      `ANALYST_SOURCES names ${path}, which cannot be read: ${(error as Error).message}`,
      {
        hint: 'Point ANALYST_SOURCES at the JSON file of named sources.',
      },
    )
  }
  return parseSourcesFile(text, env, `ANALYST_SOURCES (${path})`)
}

/** Whether a token may use a named source. */
export function mayUse(source: NamedSource, token: string | undefined): boolean {
  return source.tokens === undefined || (token !== undefined && source.tokens.includes(token))
}
