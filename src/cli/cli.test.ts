import { describe, expect, it } from 'vitest'
import { main } from './cli.js'
import { UsageError } from './errors.js'

/** Parses argv with every command replaced by a recorder. */
async function parse(argv: string[]) {
  const calls: Array<[string, Record<string, unknown>]> = []
  const code = await main(argv, async (name, options) => {
    calls.push([name, options as Record<string, unknown>])
    return 7
  })
  return { code, calls }
}

describe('analyst command line', () => {
  it.each([
    [
      ['run', 'a.py'],
      {
        files: ['a.py'],
        data: [],
        timeoutMs: 60_000,
        json: false,
        isolation: 'sandbox',
        outputDir: undefined,
      },
    ],
    [
      [
        'run',
        'a.py',
        'b.py',
        '--data',
        'x.csv',
        '--data',
        'y.csv',
        '--timeout',
        '2.5',
        '--json',
        '--output-dir',
        'out',
      ],
      { files: ['a.py', 'b.py'], data: ['x.csv', 'y.csv'], timeoutMs: 2500, json: true, outputDir: 'out' },
    ],
    [['run', '-'], { files: ['-'] }],
    [['run', 'a.py', '--no-isolation'], { isolation: 'none' }],
    [['run', 'a.py', '--template', 'modern'], { template: 'modern' }],
  ])('run %j', async (argv, expected) => {
    const { code, calls } = await parse(argv)
    expect(code).toBe(7)
    expect(calls).toHaveLength(1)
    expect(calls[0]?.[0]).toBe('run')
    expect(calls[0]?.[1]).toMatchObject(expected)
  })

  it.each([
    [['mcp'], { data: [], allowDir: [], maxSteps: 8, isolation: 'sandbox', model: undefined }],
    [
      [
        'mcp',
        '--data',
        'a.csv',
        '--allow-dir',
        'd1',
        '--allow-dir',
        'd2',
        '--model',
        'openai:x',
        '--max-steps',
        '3',
      ],
      { data: ['a.csv'], allowDir: ['d1', 'd2'], model: 'openai:x', maxSteps: 3 },
    ],
    [['mcp', '--no-isolation', '--sandbox', 'local'], { isolation: 'none', sandbox: 'local' }],
  ])('mcp %j', async (argv, expected) => {
    const { calls } = await parse(argv)
    expect(calls[0]?.[0]).toBe('mcp')
    expect(calls[0]?.[1]).toMatchObject(expected)
  })

  it('serve --allow-dir', async () => {
    const { calls } = await parse(['serve', '--allow-dir', 'd1', '--port', '0'])
    expect(calls[0]?.[1]).toMatchObject({ allowDir: ['d1'], port: 0 })
    expect((await parse(['serve'])).calls[0]?.[1]).toMatchObject({ allowDir: [] })
  })

  it('serve --allow-network, off unless given', async () => {
    expect((await parse(['serve', '--allow-network'])).calls[0]?.[1]).toMatchObject({ allowNetwork: true })
    expect((await parse(['serve'])).calls[0]?.[1]).toMatchObject({ allowNetwork: false })
  })

  it.each([
    ['ask', ['ask', 'Q?']],
    ['chat', ['chat']],
    ['serve', ['serve']],
    ['mcp', ['mcp']],
    ['eval', ['eval', 'set']],
  ])('--modal-tool on %s, repeatable', async (name, argv) => {
    const tools = ['--modal-tool', 'sd/generate=makes an image', '--modal-tool', 'emb/embed']
    const { calls } = await parse([...argv, ...tools])
    expect(calls[0]?.[0]).toBe(name)
    expect(calls[0]?.[1]).toMatchObject({ modalTool: ['sd/generate=makes an image', 'emb/embed'] })
  })

  it.each([
    ['ask', ['ask', 'Q?']],
    ['chat', ['chat']],
    ['serve', ['serve']],
    ['mcp', ['mcp']],
    ['eval', ['eval', 'set']],
  ])('--model-timeout on %s, in seconds', async (name, argv) => {
    const { calls } = await parse([...argv, '--model-timeout', '2.5'])
    expect(calls[0]?.[0]).toBe(name)
    expect(calls[0]?.[1]).toMatchObject({ modelTimeout: 2.5 })
    await expect(parse([...argv, '--model-timeout', 'never'])).rejects.toThrow(/positive number of seconds/)
  })

  it('serve --gpu --image --jupyter-kernel, as the other engine doors take them', async () => {
    const { calls } = await parse(['serve', '--sandbox', 'modal', '--gpu', 'A10G:2', '--image', 'pytorch:2'])
    expect(calls[0]?.[1]).toMatchObject({ sandbox: 'modal', gpu: 'A10G:2', image: 'pytorch:2' })
    const jupyter = await parse(['serve', '--sandbox', 'jupyter', '--jupyter-kernel', 'ir'])
    expect(jupyter.calls[0]?.[1]).toMatchObject({ jupyterKernel: 'ir' })
  })

  it.each([
    [['run', 'a.py', '--memory', '4G', '--cpus', '1.5'], 'run'],
    [['ask', 'Q?', '--memory', '512M'], 'ask'],
    [['chat', '--cpus', '0.5'], 'chat'],
    [['serve', '--memory', '1.5GiB', '--cpus', '2'], 'serve'],
    [['mcp', '--memory', '2048MB'], 'mcp'],
  ])('%j: each sandbox’s own memory and CPU', async (argv, name) => {
    const { calls } = await parse(argv)
    expect(calls[0]?.[0]).toBe(name)
    const given = calls[0]?.[1] as { memoryBytes?: number; milliCpus?: number }
    const memory = argv.includes('--memory') ? argv[argv.indexOf('--memory') + 1] : undefined
    const bytes: Record<string, number> = {
      '4G': 4 * 1024 ** 3,
      '512M': 512 * 1024 ** 2,
      '1.5GiB': 1.5 * 1024 ** 3,
      '2048MB': 2 * 1024 ** 3,
    }
    expect(given.memoryBytes).toBe(memory === undefined ? undefined : bytes[memory])
    const cpus = argv.includes('--cpus') ? Number(argv[argv.indexOf('--cpus') + 1]) * 1000 : undefined
    expect(given.milliCpus).toBe(cpus)
  })

  it('doctor --json', async () => {
    expect((await parse(['doctor', '--json'])).calls).toEqual([
      ['doctor', { json: true, data: [], cwd: process.cwd() }],
    ])
  })

  it('doctor --data and profile take sources as --data does', async () => {
    const doctor = await parse(['doctor', '--data', 'shop=postgres://ro@db/shop', '--data', 'sqlite:a.db'])
    expect(doctor.calls[0]?.[1]).toMatchObject({ data: ['shop=postgres://ro@db/shop', 'sqlite:a.db'] })
    const profile = await parse(['profile', 'sales.csv', 'mysql://ro@db/shop', '--json'])
    expect(profile.calls).toEqual([
      ['profile', { paths: ['sales.csv', 'mysql://ro@db/shop'], json: true, cwd: process.cwd() }],
    ])
  })

  it.each([
    [
      ['template', 'build', 'modern'],
      ['template-build', { spec: 'modern', force: false, quiet: false }],
    ],
    [
      ['template', 'build', 'team.yaml', '--name', 'team', '--force', '--quiet'],
      ['template-build', { spec: 'team.yaml', name: 'team', force: true, quiet: true }],
    ],
    [
      ['template', 'list', '--json'],
      ['template-list', { json: true }],
    ],
    [
      ['template', 'show', 'modern'],
      ['template-show', { name: 'modern', json: false }],
    ],
    [
      ['template', 'rm', 'a', 'b'],
      ['template-rm', { names: ['a', 'b'] }],
    ],
    [
      ['template', 'export', 'modern', 'out.tar'],
      ['template-export', { name: 'modern', out: 'out.tar' }],
    ],
    [
      ['template', 'import', 'out.tar', '--name', 'copy'],
      ['template-import', { file: 'out.tar', name: 'copy' }],
    ],
    [
      ['template', 'prune', '--all'],
      ['template-prune', { all: true, json: false }],
    ],
  ])('template %j', async (argv, [name, expected]) => {
    const { calls } = await parse(argv as string[])
    expect(calls).toHaveLength(1)
    expect(calls[0]?.[0]).toBe(name)
    expect(calls[0]?.[1]).toMatchObject({ ...(expected as object), cwd: process.cwd() })
  })

  it.each([
    [['template', 'build'], /missing required argument 'spec'/],
    [['template', 'export', 'modern'], /missing required argument 'out'/],
    [['template', 'frob'], /unknown command/],
  ])('template rejects %j with a usage error', async (argv, message) => {
    const error = await parse(argv).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UsageError)
    expect((error as UsageError).message).toMatch(message)
  })

  it.each([
    [['frobnicate'], /unknown command/],
    [['run'], /missing required argument/],
    [['run', 'a.py', '--timeout', 'soon'], /positive number of seconds/],
    [['run', 'a.py', '--timeout', '0'], /positive number of seconds/],
    [['run', 'a.py', '--nope'], /unknown option/],
    [['run', 'a.py', '--data'], /argument missing/],
    [['run', 'a.py', '--memory', 'lots'], /size such as 4G/],
    [['serve', '--cpus', '0'], /number of cores/],
  ])('rejects %j with a usage error', async (argv, message) => {
    const error = await parse(argv).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UsageError)
    expect((error as UsageError).code).toBe(2)
    expect((error as UsageError).message).toMatch(message)
  })

  it('shows help with exit code 0 and runs nothing', async () => {
    const { code, calls } = await parse(['run', '--help'])
    expect(code).toBe(0)
    expect(calls).toEqual([])
  })
})
