/**
 * Models: `provider:model` specs → AI SDK language models, chosen by flag, environment or what
 * is reachable, with the defaults the analyst loop needs (how code reaches the sandbox).
 * @module
 */
import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenAI } from '@ai-sdk/openai'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import type { LanguageModel } from 'ai'
import { ModelConfigError } from '../errors.js'

export type ModelProvider = 'openai' | 'anthropic' | 'openai-compatible' | 'ollama'
/** How code reaches the sandbox: a `run_python` tool call, or a fenced block in plain text. */
export type CodeMode = 'tools' | 'text'

export interface ModelChoice {
  model: LanguageModel
  /** e.g. `openai:gpt-4.1-mini`. */
  spec: string
  provider: ModelProvider | 'custom'
  modelId: string
  /** The mode this model works best in; `--mode` overrides it. */
  mode: CodeMode
}

export interface ResolveOptions {
  /** `provider:model`; else ANALYST_MODEL; else the first configured provider. */
  spec?: string
  /** Chat completions endpoint root for openai-compatible; else ANALYST_BASE_URL. */
  baseUrl?: string
  env?: NodeJS.ProcessEnv
  /** Injected into providers (tests, proxies). */
  fetch?: typeof fetch
}

/** No model is configured, or the configuration is wrong: exit 2 with what to do. */
export { ModelConfigError }

const configError = (message: string, hint: string) => new ModelConfigError(message, { hint })

/** How long a model call waits, when neither the flag nor ANALYST_MODEL_TIMEOUT says. */
export const DEFAULT_MODEL_TIMEOUT_SECONDS = 120

/**
 * How long a model call may wait for the model (a streamed reply: for each next part), in ms:
 * `seconds` (--model-timeout), else ANALYST_MODEL_TIMEOUT, else 120 s.
 */
export function modelTimeoutMs(seconds: number | undefined, env: NodeJS.ProcessEnv = process.env): number {
  if (seconds !== undefined) return seconds * 1000
  const set = env.ANALYST_MODEL_TIMEOUT?.trim()
  if (!set) return DEFAULT_MODEL_TIMEOUT_SECONDS * 1000
  const value = Number(set)
  if (!Number.isFinite(value) || value <= 0) {
    throw configError(
      `ANALYST_MODEL_TIMEOUT=${set} is not a number of seconds`,
      `Set it to a positive number of seconds (default ${DEFAULT_MODEL_TIMEOUT_SECONDS}), or unset it.`,
    )
  }
  return value * 1000
}

export const DEFAULT_MODELS = { openai: 'gpt-4.1-mini', anthropic: 'claude-sonnet-4-5' } as const
const HOW_TO_CONFIGURE =
  'Pass --model provider:model (or set ANALYST_MODEL), e.g. --model openai:gpt-4.1-mini with OPENAI_API_KEY set, ' +
  '--model anthropic:claude-sonnet-4-5 with ANTHROPIC_API_KEY, --model ollama:qwen2.5-coder for a local Ollama, or ' +
  '--model openai-compatible:NAME --base-url http://host:port/v1 for vLLM, llama.cpp or LM Studio.'

function ollamaHost(env: NodeJS.ProcessEnv): string {
  const host = env.OLLAMA_HOST || '127.0.0.1:11434'
  return (host.startsWith('http') ? host : `http://${host}`).replace(/\/+$/, '')
}

/**
 * How long a local Ollama may take to list its models. Nothing listening is refused at once; a
 * server that listens but answers slowly (a busy machine, the first request of this process) is
 * worth a few seconds rather than a false "no model is configured".
 */
const OLLAMA_PROBE_MS = 3000

/** The first model a local Ollama has, if one answers within a moment. */
async function localOllamaModel(env: NodeJS.ProcessEnv, fetcher: typeof fetch): Promise<string | undefined> {
  try {
    const response = await fetcher(`${ollamaHost(env)}/api/tags`, {
      signal: AbortSignal.timeout(OLLAMA_PROBE_MS),
    })
    if (!response.ok) return undefined
    const body = (await response.json()) as { models?: Array<{ name?: string }> }
    return body.models?.find((model) => model.name)?.name
  } catch {
    return undefined
  }
}

export function parseSpec(spec: string): { provider: ModelProvider; modelId: string } {
  const colon = spec.indexOf(':')
  const provider = spec.slice(0, colon)
  const modelId = spec.slice(colon + 1)
  if (colon <= 0 || !modelId) {
    throw configError(`"${spec}" is not a model spec`, `Write it as provider:model. ${HOW_TO_CONFIGURE}`)
  }
  if (!['openai', 'anthropic', 'openai-compatible', 'ollama'].includes(provider)) {
    throw configError(
      `Unknown model provider "${provider}"`,
      `Known providers: openai, anthropic, openai-compatible, ollama. ${HOW_TO_CONFIGURE}`,
    )
  }
  return { provider: provider as ModelProvider, modelId }
}

/** The model to use, from the spec, ANALYST_MODEL, or (when neither is set) what is configured. */
export async function resolveModel(options: ResolveOptions = {}): Promise<ModelChoice> {
  const env = options.env ?? process.env
  const fetcher = options.fetch ?? globalThis.fetch
  let spec = options.spec || env.ANALYST_MODEL
  if (!spec) {
    if (env.OPENAI_API_KEY) spec = `openai:${DEFAULT_MODELS.openai}`
    else if (env.ANTHROPIC_API_KEY) spec = `anthropic:${DEFAULT_MODELS.anthropic}`
    else {
      const local = await localOllamaModel(env, fetcher)
      if (local) spec = `ollama:${local}`
    }
  }
  if (!spec) throw configError('No model is configured', HOW_TO_CONFIGURE)
  const { provider, modelId } = parseSpec(spec)
  const common = { fetch: options.fetch }
  switch (provider) {
    case 'openai': {
      if (!env.OPENAI_API_KEY)
        throw configError(`${spec} needs OPENAI_API_KEY`, 'Set OPENAI_API_KEY, or choose another --model.')
      const openai = createOpenAI({
        apiKey: env.OPENAI_API_KEY,
        baseURL: options.baseUrl || env.OPENAI_BASE_URL,
        ...common,
      })
      return { model: openai.chat(modelId), spec, provider, modelId, mode: 'tools' }
    }
    case 'anthropic': {
      if (!env.ANTHROPIC_API_KEY) {
        throw configError(
          `${spec} needs ANTHROPIC_API_KEY`,
          'Set ANTHROPIC_API_KEY, or choose another --model.',
        )
      }
      const anthropic = createAnthropic({ apiKey: env.ANTHROPIC_API_KEY, ...common })
      return { model: anthropic(modelId), spec, provider, modelId, mode: 'tools' }
    }
    case 'ollama':
    case 'openai-compatible': {
      const baseURL =
        provider === 'ollama'
          ? `${ollamaHost(env)}/v1`
          : (options.baseUrl || env.ANALYST_BASE_URL)?.replace(/\/+$/, '')
      if (!baseURL) {
        throw configError(
          `${spec} needs the server's address`,
          'Pass --base-url http://host:port/v1 or set ANALYST_BASE_URL.',
        )
      }
      const compatible = createOpenAICompatible({
        name: provider,
        baseURL,
        apiKey: env.ANALYST_API_KEY || undefined,
        includeUsage: true,
        ...common,
      })
      // Local servers differ in tool support; fenced code in plain text works with every model.
      return { model: compatible.chatModel(modelId), spec, provider, modelId, mode: 'text' }
    }
  }
}
