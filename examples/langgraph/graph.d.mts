// Types of graph.mjs, for TypeScript callers (the test).
import type { BaseChatModel } from '@langchain/core/language_models/chat_models'
import type { Sandbox } from 'analyst'

export declare const MAX_ITERATIONS: number
export declare function codeOf(reply: string): string

export interface AnalystState {
  question: string
  data: string
  code: string
  output: string
  images: string[]
  error: boolean
  iterations: number
  answer: string
}

export declare function buildAnalystGraph(options: {
  model: BaseChatModel
  sandbox: Pick<Sandbox, 'runCode'>
  maxIterations?: number
}): {
  invoke(
    input: { question: string; data: string },
    config?: { callbacks?: unknown[]; recursionLimit?: number },
  ): Promise<AnalystState>
}
