import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { ModelConfigError, parseSpec, resolveModel } from './index.js'

describe('parseSpec', () => {
  it('splits provider and model, keeping colons in the model name', () => {
    expect(parseSpec('ollama:qwen2.5-coder:7b')).toEqual({ provider: 'ollama', modelId: 'qwen2.5-coder:7b' })
  })

  it.each(['gpt-4o', 'openai:', ':x', 'frob:model'])('rejects %s with how to write one', (spec) => {
    expect(() => parseSpec(spec)).toThrow(ModelConfigError)
  })
})

describe('resolveModel', () => {
  it('takes --model over ANALYST_MODEL, and ANALYST_MODEL over detected keys', async () => {
    const env = { ANALYST_MODEL: 'anthropic:claude-x', ANTHROPIC_API_KEY: 'a', OPENAI_API_KEY: 'o' }
    expect((await resolveModel({ spec: 'openai:gpt-x', env })).spec).toBe('openai:gpt-x')
    expect((await resolveModel({ env })).spec).toBe('anthropic:claude-x')
  })

  it('uses the first configured provider: OpenAI, then Anthropic', async () => {
    expect((await resolveModel({ env: { OPENAI_API_KEY: 'o', ANTHROPIC_API_KEY: 'a' } })).provider).toBe(
      'openai',
    )
    const anthropic = await resolveModel({ env: { ANTHROPIC_API_KEY: 'a' } })
    expect([anthropic.provider, anthropic.mode]).toEqual(['anthropic', 'tools'])
  })

  it('finds a local Ollama and its first model', async () => {
    const server = createServer((_req, res) => {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ models: [{ name: 'qwen2.5-coder:7b' }] }))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      const choice = await resolveModel({ env: { OLLAMA_HOST: `127.0.0.1:${port}` } })
      expect([choice.spec, choice.mode]).toEqual(['ollama:qwen2.5-coder:7b', 'text'])
    } finally {
      server.close()
    }
  })

  it('says how to configure a model when there is none', async () => {
    const error = await resolveModel({ env: { OLLAMA_HOST: '127.0.0.1:9' } }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ModelConfigError)
    expect((error as ModelConfigError).hint).toMatch(/--model.*ANALYST_MODEL.*OPENAI_API_KEY/)
  })

  it('needs the key of the provider it is told to use, and a base URL for openai-compatible', async () => {
    await expect(resolveModel({ spec: 'openai:gpt-x', env: {} })).rejects.toThrow(/needs OPENAI_API_KEY/)
    await expect(resolveModel({ spec: 'openai-compatible:m', env: {} })).rejects.toThrow(
      /needs the server's address/,
    )
    const compatible = await resolveModel({
      spec: 'openai-compatible:m',
      env: { ANALYST_BASE_URL: 'http://127.0.0.1:1/v1/' },
    })
    expect(compatible.mode).toBe('text')
  })
})
