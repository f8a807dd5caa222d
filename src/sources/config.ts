/**
 * The named sources of `analyst serve`: a JSON file, named by ANALYST_SOURCES, that maps each name
 * to a URL, the environment variable that holds its password, and who may use it: tokens, and
 * signed-in users by their identity provider's groups or by email. Users pick sources by name and
 * never see a URL or a password.
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
  groups: z.array(z.string().min(1)).optional(),
  users: z.array(z.string().email('users are email addresses')).optional(),
})

const fileSchema = z.record(
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a source name must be letters, digits and _'),
  entrySchema,
)

export interface NamedSource {
  spec: SourceSpec
  /** Who may use it: these tokens, signed-in users in these groups or with these emails. None of them: everyone. */
  tokens?: string[]
  groups?: string[]
  users?: string[]
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
      hint: 'Write it as {"NAME": {"url": "postgres://USER@HOST/DB", "passwordEnv": "VAR", "tokens": ["…"], "groups": ["…"]}}.',
    })
  }
  const parsed = fileSchema.safeParse(json)
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const path = issue.path.length > 0 ? issue.path.map(String).join('.') : '(the whole file)'
      return `${path}: ${issue.message}`
    })
    throw new InvalidArgumentError(`${where} is not a valid sources file: ${problems.join('; ')}`, {
      hint: 'Each key is a source name, each value {"url": "…", "passwordEnv": "VAR"} with, to keep it to some, "tokens", "groups" (of signed-in users) or "users" (emails).',
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
    const { tokens, groups, users } = entry
    sources.set(name, {
      spec: { ...spec, name },
      ...(tokens ? { tokens } : {}),
      ...(groups ? { groups } : {}),
      ...(users ? { users: users.map((email) => email.toLowerCase()) } : {}),
    })
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
