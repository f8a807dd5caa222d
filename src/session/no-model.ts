/**
 * A stand-in for a model that could not be had (none configured, a wrong spec): a session still
 * opens with it, so that cells its caller writes (MCP's `run_python`) run; a question needs the
 * real model and says why there is none.
 * @module
 */
import type { LanguageModelV3 } from '@ai-sdk/provider'
import type { ModelChoice } from '../models/index.js'

const standIns = new WeakSet<ModelChoice>()

/** A model choice whose calls fail with `reason`; its spec is empty, so nothing records it. */
export function missingModel(reason: unknown): ModelChoice {
  const fail = () => Promise.reject(reason)
  const model: LanguageModelV3 = {
    specificationVersion: 'v3',
    provider: 'none',
    modelId: 'none',
    supportedUrls: {},
    doGenerate: fail,
    doStream: fail,
  }
  const choice: ModelChoice = { model, spec: '', provider: 'custom', modelId: 'none', mode: 'tools' }
  standIns.add(choice)
  return choice
}

export function isMissingModel(choice: ModelChoice): boolean {
  return standIns.has(choice)
}
