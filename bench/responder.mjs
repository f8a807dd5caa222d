// A scripted model shared by every session of a benchmark: its reply depends only on how many tool
// results the prompt holds (the steps' code in turn, then the answer).
import { ScriptedModel } from '../dist/test/index.js'

export function responder(steps, answer) {
  const next = (prompt) => {
    const done = prompt.filter((message) => message.role === 'tool').length
    return done < steps.length ? { code: steps[done] } : { text: answer }
  }
  const once = (options) => new ScriptedModel([next(options.prompt)])
  return {
    specificationVersion: 'v3',
    provider: 'bench',
    modelId: 'responder',
    supportedUrls: {},
    doGenerate: (options) => once(options).doGenerate(options),
    doStream: (options) => once(options).doStream(options),
  }
}
