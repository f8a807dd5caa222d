import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { DABENCH, DABENCH_MISSING } from '../../test/support/dabench.js'
import { loadEvalSet, selectQuestions } from './dataset.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const question = (id: number, extra: Record<string, unknown> = {}) => ({
  id,
  question: `Question ${id}?`,
  concepts: ['Summary Statistics'],
  constraints: 'Round to two decimals.',
  format: `@answer_${id}[value]`,
  file_name: 'a.csv',
  level: id % 2 ? 'hard' : 'easy',
  ...extra,
})

/** A set folder with these lines (strings are written as they are, objects as JSON). */
function makeSet(questions: unknown[], labels: unknown[], files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'analyst-set-'))
  dirs.push(dir)
  const lines = (rows: unknown[]) =>
    rows.map((row) => (typeof row === 'string' ? row : JSON.stringify(row))).join('\n')
  writeFileSync(join(dir, 'my-questions.jsonl'), lines(questions))
  writeFileSync(join(dir, 'my-labels.jsonl'), lines(labels))
  mkdirSync(join(dir, 'tables'))
  writeFileSync(join(dir, 'tables', 'a.csv'), 'x\n1\n')
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  return dir
}

describe('loadEvalSet', () => {
  it('reads questions with their labels, in file order, values as text', async () => {
    const dir = makeSet(
      [question(3), '', question(1, { concepts: undefined, constraints: undefined })],
      [
        { id: 1, common_answers: [['answer_1', 2.5]] },
        { id: 3, common_answers: [['answer_3', '7']] },
      ],
    )
    const set = await loadEvalSet(dir)
    expect(set.name).toBe(dir.split('/').at(-1))
    expect(set.questions.map((q) => [q.id, q.level, q.answers])).toEqual([
      [3, 'hard', [['answer_3', '7']]],
      [1, 'hard', [['answer_1', '2.5']]],
    ])
    expect(set.questions[1]).toMatchObject({ concepts: [], constraints: '', fileName: 'a.csv' })
  })

  it('names every problem by file and line', async () => {
    const dir = makeSet(
      [
        question(0),
        '{"id": 1, "question": ',
        question(2, { format: 5 }),
        question(0),
        question(4, { file_name: 'nope.csv' }),
        question(5),
      ],
      [
        { id: 0, common_answers: [['answer_0', '1']] },
        { id: 2, common_answers: [] },
        { id: 4, common_answers: [['answer_4', '1']] },
        { id: 0, common_answers: [['answer_0', '1']] },
      ],
    )
    const error = await loadEvalSet(dir).catch((e: Error) => e)
    const message = (error as Error).message
    expect(message).toContain('7 problem(s)')
    expect(message).toContain(`${dir}/my-questions.jsonl:2: not valid JSON`)
    expect(message).toMatch(/my-questions.jsonl:3: "format" .*string/)
    expect(message).toContain(`${dir}/my-labels.jsonl:2: "common_answers" must list at least one`)
    expect(message).toContain('my-labels.jsonl:4: id 0 appears again (first at line 1)')
    expect(message).toContain('my-questions.jsonl:4: id 0 appears again (first at line 1)')
    expect(message).toContain('my-questions.jsonl:5: its table tables/nope.csv does not exist')
    expect(message).toContain('my-questions.jsonl:6: question 5 has no labels')
    expect((error as { hint?: string }).hint).toContain('common_answers')
  })

  it('says what is missing from the folder', async () => {
    await expect(loadEvalSet('/nonexistent/set')).rejects.toThrow('No folder /nonexistent/set')
    const dir = makeSet([question(0)], [{ id: 0, common_answers: [['a', '1']] }], {
      'other-questions.jsonl': '',
    })
    await expect(loadEvalSet(dir)).rejects.toThrow(/Several \*questions\*\.jsonl files .*my-questions.jsonl/)
    rmSync(join(dir, 'other-questions.jsonl'))
    rmSync(join(dir, 'my-labels.jsonl'))
    await expect(loadEvalSet(dir)).rejects.toThrow('No *labels*.jsonl file')
    writeFileSync(join(dir, 'my-labels.jsonl'), '\n\n')
    await expect(loadEvalSet(dir)).rejects.toThrow(/my-labels.jsonl: the file has no lines/)
    rmSync(join(dir, 'tables'), { recursive: true })
    await expect(loadEvalSet(dir)).rejects.toThrow('No tables/ folder')
  })

  it('selects by ids, level and limit, and refuses unknown ids', async () => {
    const dir = makeSet(
      [0, 1, 2, 3, 4].map((id) => question(id)),
      [0, 1, 2, 3, 4].map((id) => ({ id, common_answers: [[`answer_${id}`, '1']] })),
    )
    const set = await loadEvalSet(dir)
    expect(selectQuestions(set, { level: 'easy' }).map((q) => q.id)).toEqual([0, 2, 4])
    expect(selectQuestions(set, { ids: [4, 1, 2], level: 'easy' }).map((q) => q.id)).toEqual([2, 4])
    expect(selectQuestions(set, { limit: 2 }).map((q) => q.id)).toEqual([0, 1])
    expect(() => selectQuestions(set, { ids: [1, 9] })).toThrow('No question with id 9')
    expect(() => selectQuestions(set, { level: 'expert' })).toThrow('No question is left')
  })
})

describe.skipIf(!DABENCH)(`InfiAgent-DABench${DABENCH ? '' : ` (${DABENCH_MISSING})`}`, () => {
  it('reads all 257 questions over 52 tables', async () => {
    const set = await loadEvalSet(DABENCH as string)
    expect(set.questions).toHaveLength(257)
    expect(new Set(set.questions.map((q) => q.fileName)).size).toBe(52)
    expect(new Set(set.questions.map((q) => q.level))).toEqual(new Set(['easy', 'medium', 'hard']))
    expect(set.questions.every((q) => q.answers.length > 0)).toBe(true)
  })
})
