// Sessions of a benchmark against `analyst serve`: a scripted model they all share (its reply
// depends only on how many tool results the prompt holds: the steps' code in turn, then the
// answer), a new session with a data file, and a question over the HTTP API read to its end.
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

/** POST /api/sessions/:id/ask, the whole stream read: its status, whether it was answered, how long it took. */
export async function askOverHttp(url, id, question) {
  const started = performance.now()
  const response = await fetch(`${url}/api/sessions/${id}/ask`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ question }),
  })
  const text = await response.text()
  return { status: response.status, ok: text.includes('event: done'), ms: performance.now() - started, text }
}

/** A new session with one data file uploaded; its id. */
export async function newSession(url, data, name) {
  const { id } = await (await fetch(`${url}/api/sessions`, { method: 'POST', body: '{}' })).json()
  const form = new FormData()
  form.append('file', new Blob([data]), name)
  const uploaded = await fetch(`${url}/api/sessions/${id}/files`, { method: 'POST', body: form })
  if (uploaded.status !== 201) throw new Error(`upload failed: ${uploaded.status}`)
  return id
}
