/**
 * A benchmark set in InfiAgent-DABench's shape, read from a folder: a `*questions*.jsonl` (id,
 * question, concepts, constraints, format, file_name, level), a `*labels*.jsonl` (`{"id",
 * "common_answers": [[name, value], …]}`) and the tables in `tables/`. Whatever is wrong is
 * reported by file and line, all at once, so that a user's own set can be fixed in one pass.
 * @module
 */
import { existsSync, statSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { z } from 'zod'
import { InvalidArgumentError } from '../errors.js'

/** One question with its expected answers. */
export interface EvalQuestion {
  id: number
  question: string
  concepts: string[]
  constraints: string
  /** How the answer must be written: `@name[value]` lines. */
  format: string
  /** The table the question is about, in `tables/`. */
  fileName: string
  level: string
  /** The labels: each sub-answer's name and expected value, as the benchmark writes them. */
  answers: Array<[name: string, value: string]>
}

export interface EvalSet {
  /** The folder, absolute. */
  dir: string
  /** The folder's name, e.g. `dabench`. */
  name: string
  questionsFile: string
  labelsFile: string
  tablesDir: string
  /** In the order of the questions file. */
  questions: EvalQuestion[]
}

/** Shown at most, so that a wholly wrong file does not flood the terminal. */
const MAX_PROBLEMS = 20

const questionLine = z.object({
  id: z.number().int().nonnegative(),
  question: z.string().min(1),
  concepts: z.array(z.string()).default([]),
  constraints: z.string().default(''),
  format: z.string().min(1),
  file_name: z.string().min(1),
  level: z.string().min(1),
})

const labelLine = z.object({
  id: z.number().int().nonnegative(),
  common_answers: z
    .array(z.tuple([z.string().min(1), z.union([z.string(), z.number()])]))
    .min(1, 'must list at least one [name, value] pair'),
})

/** The one file in `dir` whose name matches; a clear error for none or several. */
async function findOne(dir: string, names: string[], kind: string): Promise<string> {
  const found = names.filter((name) => name.includes(kind) && name.endsWith('.jsonl'))
  if (found.length === 1) return join(dir, found[0] as string)
  if (found.length === 0) {
    throw new InvalidArgumentError(`No *${kind}*.jsonl file in ${dir}`, {
      hint: 'A benchmark folder holds a *questions*.jsonl, a *labels*.jsonl and a tables/ folder (the shape of InfiAgent-DABench).',
    })
  }
  throw new InvalidArgumentError(`Several *${kind}*.jsonl files in ${dir}: ${found.join(', ')}`, {
    hint: 'Keep one of them in the folder (or move the others to a subfolder).',
  })
}

/** What zod found wrong, in a few words. */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => {
      const path = issue.path.length > 0 ? `"${issue.path.join('.')}" ` : ''
      return `${path}${issue.message}`.trim()
    })
    .join('; ')
}

/** The lines of a JSONL file, parsed and validated; problems are collected as `file:line: what`. */
async function readJsonl<T>(
  path: string,
  schema: z.ZodType<T>,
  problems: string[],
): Promise<Array<{ line: number; value: T }>> {
  const text = await readFile(path, 'utf8')
  const rows: Array<{ line: number; value: T }> = []
  text.split('\n').forEach((raw, index) => {
    const line = index + 1
    if (!raw.trim()) return
    let json: unknown
    try {
      json = JSON.parse(raw)
    } catch (error) {
      problems.push(`${path}:${line}: not valid JSON (${(error as Error).message})`)
      return
    }
    const parsed = schema.safeParse(json)
    if (parsed.success) rows.push({ line, value: parsed.data })
    else problems.push(`${path}:${line}: ${describeIssues(parsed.error)}`)
  })
  if (rows.length === 0 && problems.every((p) => !p.startsWith(`${path}:`)))
    problems.push(`${path}: the file has no lines`)
  return rows
}

/** Reads and checks a DABench-shaped folder. */
export async function loadEvalSet(folder: string): Promise<EvalSet> {
  const dir = resolve(folder)
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new InvalidArgumentError(`No folder ${folder}`, {
      hint: 'Give the folder of a benchmark set, e.g. the InfiAgent-DABench data folder.',
    })
  }
  const names = await readdir(dir)
  const questionsFile = await findOne(dir, names, 'questions')
  const labelsFile = await findOne(dir, names, 'labels')
  const tablesDir = join(dir, 'tables')
  if (!existsSync(tablesDir) || !statSync(tablesDir).isDirectory()) {
    throw new InvalidArgumentError(`No tables/ folder in ${dir}`, {
      hint: "Put the questions' data files in a tables/ folder beside the .jsonl files.",
    })
  }

  const problems: string[] = []
  const questionRows = await readJsonl(questionsFile, questionLine, problems)
  const labelRows = await readJsonl(labelsFile, labelLine, problems)

  const labels = new Map<number, { line: number; answers: Array<[string, string]> }>()
  for (const { line, value } of labelRows) {
    const first = labels.get(value.id)
    if (first) {
      problems.push(`${labelsFile}:${line}: id ${value.id} appears again (first at line ${first.line})`)
      continue
    }
    labels.set(value.id, {
      line,
      answers: value.common_answers.map(([name, expected]) => [name, String(expected)]),
    })
  }

  const tables = new Set(await readdir(tablesDir))
  const seen = new Map<number, number>()
  const questions: EvalQuestion[] = []
  for (const { line, value } of questionRows) {
    const where = `${questionsFile}:${line}`
    const first = seen.get(value.id)
    if (first !== undefined) {
      problems.push(`${where}: id ${value.id} appears again (first at line ${first})`)
      continue
    }
    seen.set(value.id, line)
    const label = labels.get(value.id)
    if (!label) problems.push(`${where}: question ${value.id} has no labels in ${labelsFile}`)
    if (!tables.has(value.file_name))
      problems.push(`${where}: its table tables/${value.file_name} does not exist`)
    if (!label || !tables.has(value.file_name)) continue
    questions.push({
      id: value.id,
      question: value.question,
      concepts: value.concepts,
      constraints: value.constraints,
      format: value.format,
      fileName: value.file_name,
      level: value.level,
      answers: label.answers,
    })
  }

  if (problems.length > 0) {
    const shown = problems.slice(0, MAX_PROBLEMS)
    if (problems.length > MAX_PROBLEMS) shown.push(`… and ${problems.length - MAX_PROBLEMS} more`)
    throw new InvalidArgumentError(
      `The benchmark set in ${dir} has ${problems.length} problem(s):\n  ${shown.join('\n  ')}`,
      {
        hint: 'Each questions line needs id, question, format, file_name and level (concepts and constraints are optional); each labels line needs id and common_answers: [[name, value], …].',
      },
    )
  }
  return {
    dir,
    name: dir.slice(dir.lastIndexOf('/') + 1),
    questionsFile,
    labelsFile,
    tablesDir,
    questions,
  }
}

/** Which questions to run. */
export interface Selection {
  ids?: number[]
  level?: string
  limit?: number
}

/** The questions a selection keeps, in the set's order; an unknown id is an error. */
export function selectQuestions(set: EvalSet, selection: Selection): EvalQuestion[] {
  let chosen = set.questions
  if (selection.ids) {
    const known = new Set(chosen.map((q) => q.id))
    const unknown = selection.ids.filter((id) => !known.has(id))
    if (unknown.length > 0) {
      throw new InvalidArgumentError(`No question with id ${unknown.join(', ')} in ${set.questionsFile}`, {
        hint: 'Check the ids given with --ids.',
      })
    }
    const wanted = new Set(selection.ids)
    chosen = chosen.filter((q) => wanted.has(q.id))
  }
  if (selection.level) chosen = chosen.filter((q) => q.level === selection.level)
  if (selection.limit !== undefined) chosen = chosen.slice(0, selection.limit)
  if (chosen.length === 0) {
    throw new InvalidArgumentError('No question is left to run with these options', {
      hint: 'Check --level, --ids and --limit.',
    })
  }
  return chosen
}
