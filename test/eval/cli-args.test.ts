/** `analyst eval` and `analyst eval compare` as the command line parses them (commands replaced by a recorder). */
import { describe, expect, it } from 'vitest'
import { main } from '../../src/cli/cli.js'

async function parse(argv: string[]) {
  const calls: Array<[string, Record<string, unknown>]> = []
  const code = await main(argv, async (name, options) => {
    calls.push([name, options as Record<string, unknown>])
    return 0
  })
  return { code, calls }
}

describe('analyst eval arguments', () => {
  it.each([
    [['eval', 'sets/dabench'], { dir: 'sets/dabench', concurrency: 1, json: false }],
    [
      [
        'eval',
        'd',
        '--model',
        'openai:gpt-4.1-mini',
        '--mode',
        'text',
        '--concurrency',
        '4',
        '--limit',
        '10',
        '--level',
        'hard',
        '--ids',
        '0, 5,7',
        '--max-steps',
        '12',
        '--timeout',
        '90',
        '--out',
        'report',
        '--json',
        '--sandbox',
        'jupyter',
        '--jupyter-kernel',
        'python3-data',
      ],
      {
        dir: 'd',
        model: 'openai:gpt-4.1-mini',
        mode: 'text',
        concurrency: 4,
        limit: 10,
        level: 'hard',
        ids: [0, 5, 7],
        maxSteps: 12,
        timeout: 90,
        out: 'report',
        json: true,
        sandbox: 'jupyter',
        jupyterKernel: 'python3-data',
      },
    ],
    [['eval', '--resume', '3f2a'], { dir: undefined, resume: '3f2a' }],
  ])('eval %j', async (argv, expected) => {
    const { calls } = await parse(argv)
    expect(calls).toEqual([['eval', expect.objectContaining(expected)]])
  })

  it('parses compare as its own command', async () => {
    expect((await parse(['eval', 'compare', 'aaa', 'bbb', '--json'])).calls).toEqual([
      ['eval-compare', { a: 'aaa', b: 'bbb', json: true }],
    ])
  })

  it.each([
    [['eval', 'd', '--ids', '1,x'], /question ids separated by commas/],
    [['eval', 'd', '--level', 'expert'], /Allowed choices are easy, medium, hard/],
    [['eval', 'd', '--concurrency', '0'], /whole number, 1 or more/],
    [['eval', 'compare', 'only-one'], /missing required argument/],
  ])('refuses %j', async (argv, message) => {
    await expect(parse(argv)).rejects.toThrow(message)
  })
})
