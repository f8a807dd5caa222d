/**
 * A small benchmark set in DABench's shape, made by the tests in a temporary folder (two real
 * tables, six questions of every level), and recorded replies that answer each question as a plan
 * says: all right, partly right, wrong, or without answer lines. Every score is thus known before
 * the run: the tests compute it from the plan.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Recording } from '../../src/eval/replay.js'
import type { ChatRequest, FakeReply } from '../support/fake-openai.js'

export interface SetQuestion {
  id: number
  question: string
  concepts: string[]
  constraints: string
  format: string
  file_name: string
  level: string
  answers: Array<[string, string]>
}

const PEOPLE = `name,age,city,score
Ann,34,Oslo,81.5
Bob,28,Rome,67.25
Cid,45,Oslo,90.0
Dee,39,Lima,72.75
Eve,23,Rome,88.5
Fay,51,Lima,59.0
`
const SALES = `month,units,price
2024-01,10,2.5
2024-02,12,2.5
2024-03,9,3.0
2024-04,15,3.0
`

export const QUESTIONS: SetQuestion[] = [
  {
    id: 0,
    question: 'What is the mean age?',
    concepts: ['Summary Statistics'],
    constraints: 'Round to two decimal places.',
    format: '@mean_age[value] where value is a number rounded to two decimals.',
    file_name: 'people.csv',
    level: 'easy',
    answers: [['mean_age', '36.67']],
  },
  {
    id: 1,
    question: 'What is the highest score?',
    concepts: ['Summary Statistics'],
    constraints: '',
    format: '@max_score[value]',
    file_name: 'people.csv',
    level: 'easy',
    answers: [['max_score', '90.0']],
  },
  {
    id: 2,
    question: 'How many people live in Oslo and in Rome?',
    concepts: ['Summary Statistics', 'Feature Engineering'],
    constraints: 'Count rows by the city column.',
    format: '@oslo[count]\n@rome[count]',
    file_name: 'people.csv',
    level: 'medium',
    answers: [
      ['oslo', '2'],
      ['rome', '2'],
    ],
  },
  {
    id: 3,
    question: 'What are the total units sold and the month with the most units?',
    concepts: ['Summary Statistics'],
    constraints: 'Use the units column.',
    format: '@total_units[total]\n@best_month[YYYY-MM]',
    file_name: 'sales.csv',
    level: 'medium',
    answers: [
      ['total_units', '46'],
      ['best_month', '2024-04'],
    ],
  },
  {
    id: 4,
    question: 'What is the Pearson correlation between age and score, and its direction?',
    concepts: ['Correlation Analysis'],
    constraints: 'Round the coefficient to two decimals. The direction is positive or negative.',
    format: '@r[value]\n@direction[positive or negative]\n@n[rows used]',
    file_name: 'people.csv',
    level: 'hard',
    answers: [
      ['r', '-0.27'],
      ['direction', 'negative'],
      ['n', '6'],
    ],
  },
  {
    id: 5,
    question: 'What is the revenue of the best month?',
    concepts: ['Feature Engineering'],
    constraints: 'Revenue is units times price.',
    format: '@revenue[value]',
    file_name: 'sales.csv',
    level: 'hard',
    answers: [['revenue', '45.0']],
  },
]

/** Writes the set (questions and labels as JSONL, tables/) to a new temporary folder. */
export function makeSet(questions: SetQuestion[] = QUESTIONS): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'analyst-evalset-'))
  mkdirSync(join(dir, 'tables'))
  writeFileSync(join(dir, 'tables', 'people.csv'), PEOPLE)
  writeFileSync(join(dir, 'tables', 'sales.csv'), SALES)
  const jsonl = (rows: unknown[]) => `${rows.map((row) => JSON.stringify(row)).join('\n')}\n`
  writeFileSync(join(dir, 'set-questions.jsonl'), jsonl(questions.map(({ answers: _, ...q }) => q)))
  writeFileSync(
    join(dir, 'set-labels.jsonl'),
    jsonl(questions.map((q) => ({ id: q.id, common_answers: q.answers }))),
  )
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** How a question is answered: every sub-answer right, the first right only, all wrong, or no answer lines. */
export type Answering = 'right' | 'partial' | 'wrong' | 'silent'

/** A plan for the questions 0, 1, 2… in order. */
export function planOf(...answering: Answering[]): Record<number, Answering> {
  return Object.fromEntries(answering.map((how, id) => [id, how]))
}

/** The answer lines a plan gives for a question. */
export function answerLines(question: SetQuestion, how: Answering): string {
  if (how === 'silent') return 'I could not work it out.'
  return question.answers
    .map(([name, value], index) => {
      const right = how === 'right' || (how === 'partial' && index === 0)
      return `@${name}[${right ? value : `${value}9`}]`
    })
    .join('\n')
}

/** Recorded replies: one step that reads the question's table, then the answer the plan says. */
export function recordingFor(plan: Record<number, Answering>, questions = QUESTIONS): Recording {
  return Object.fromEntries(
    questions.map((q) => [
      String(q.id),
      [
        { code: `import pandas as pd\ndf = pd.read_csv('data/${q.file_name}')\nprint(df.shape)` },
        { text: `Here is the result.\n${answerLines(q, plan[q.id] ?? 'wrong')}` },
      ],
    ]),
  )
}

/** The scores a plan must get, computed the benchmark's way from the plan alone. */
export function expectedScores(plan: Record<number, Answering>, questions = QUESTIONS) {
  let right = 0
  let proportional = 0
  let subRight = 0
  let subTotal = 0
  for (const q of questions) {
    const how = plan[q.id] ?? 'wrong'
    const correct = how === 'right' ? q.answers.length : how === 'partial' ? 1 : 0
    if (correct === q.answers.length) right++
    proportional += correct / q.answers.length
    subRight += correct
    subTotal += q.answers.length
  }
  return {
    questions: questions.length,
    abq: right / questions.length,
    psaq: proportional / questions.length,
    uasq: subRight / subTotal,
  }
}

/** What the fake model server does besides answering by the plan. */
export interface OracleOptions {
  /** An HTTP error instead of this reply of this question (0: its first model call). */
  fail?: { question: number; reply: number; status: number }
  /** This question's first reply comes only after this long (to kill the eval meanwhile). */
  slow?: { question: number; ms: number }
  /** The first N requests get HTTP 429 with Retry-After: 1. */
  rateLimited?: number
}

/** The question (of `questions`) a chat request is about, from its first user message. */
export function questionOfRequest(request: ChatRequest, questions = QUESTIONS): number {
  const first = JSON.stringify(request.messages.find((m) => m.role === 'user')?.content ?? '')
  return questions.find((q) => first.includes(JSON.stringify(q.question).slice(1, -1)))?.id ?? -1
}

/**
 * Replies of a fake OpenAI-compatible server that answers every question by the plan: first code
 * that reads the question's table, then the answer lines. Stateless per request (the question and
 * the step come from the request), so questions may be asked in any order, several at once.
 */
export function oracle(plan: Record<number, Answering>, options: OracleOptions = {}, questions = QUESTIONS) {
  let limited = 0
  const reply = (request: ChatRequest): FakeReply => {
    if (limited < (options.rateLimited ?? 0)) {
      limited++
      return { status: 429, message: 'Rate limit reached', headers: { 'retry-after': '1' } }
    }
    const id = questionOfRequest(request, questions)
    const question = questions.find((q) => q.id === id)
    if (!question) return { content: 'I do not know this question.' }
    const step = request.messages.filter((m) => m.role === 'assistant').length
    if (options.fail?.question === id && options.fail.reply === step)
      return { status: options.fail.status, message: 'The request was refused.' }
    const answer: FakeReply =
      step === 0
        ? { code: `import pandas as pd\ndf = pd.read_csv('data/${question.file_name}')\nprint(df.shape)` }
        : { content: `Here is the result.\n${answerLines(question, plan[id] ?? 'wrong')}` }
    return options.slow?.question === id && step === 0 ? { delayMs: options.slow.ms, reply: answer } : answer
  }
  return Array.from({ length: 500 }, () => reply)
}
