/**
 * A stand-in for `startServer` from src/server while it is being written: the same contract
 * (`startServer({ host, port, home, model, tokens })` → `{ url, close() }`) and the HTTP API the
 * web UI reads, in memory, on the real agent and sandbox. Delete it once src/server/index.ts exists.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { basename, extname, join, resolve } from 'node:path'
import busboy from 'busboy'
import { type OpenedAnalysis, openAnalysis } from '../../src/agent/index.js'
import { profileFiles } from '../../src/data/index.js'
import type { ModelChoice } from '../../src/models/index.js'
import { LocalProvider } from '../../src/sandbox/local/index.js'
import type {
  ArtifactView,
  DatasetInfo,
  ResultView,
  RunView,
  SessionDetail,
  StepView,
} from '../../src/server/types.js'

export interface StandInOptions {
  host: string
  port: number
  home: string
  model: ModelChoice
  tokens?: string[]
}

interface Session {
  detail: SessionDetail
  dir: string
  analysis?: OpenedAnalysis
  files: Map<string, { mimeType: string; content: Uint8Array }>
}

const WEB = resolve('dist/web')
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
}

export async function startServer(options: StandInOptions): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, Session>()
  let next = 1

  function json(res: ServerResponse, status: number, body: unknown) {
    res.writeHead(status, { 'Content-Type': 'application/json' })
    res.end(JSON.stringify(body))
  }
  function fail(res: ServerResponse, status: number, message: string) {
    json(res, status, { error: { message } })
  }
  async function body(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    return chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {}
  }
  function authorized(req: IncomingMessage, url: URL): boolean {
    if (!options.tokens?.length) return true
    const header = req.headers.authorization?.replace(/^Bearer /, '')
    const query = req.method === 'GET' ? url.searchParams.get('token') : null
    return options.tokens.includes(header ?? '') || options.tokens.includes(query ?? '')
  }

  async function upload(req: IncomingMessage, res: ServerResponse, session: Session) {
    const saved = await new Promise<string | undefined>((done, reject) => {
      const parser = busboy({ headers: req.headers })
      let path: string | undefined
      parser.on('file', (field, stream, info) => {
        if (field !== 'file') return stream.resume()
        const chunks: Buffer[] = []
        stream.on('data', (chunk: Buffer) => chunks.push(chunk))
        stream.on('end', () => {
          path = join(session.dir, basename(info.filename ?? 'upload').replace(/[^\w.-]/g, '_'))
          writeFileSync(path, Buffer.concat(chunks))
        })
      })
      parser.on('close', () => done(path))
      parser.on('error', reject)
      req.pipe(parser)
    })
    if (!saved) return fail(res, 400, 'No file')
    const [profile] = await profileFiles([saved])
    if (!profile) return fail(res, 500, 'No profile')
    const info: DatasetInfo = { name: profile.name, bytes: profile.bytes, profile }
    session.detail.datasets = [...session.detail.datasets.filter((d) => d.name !== info.name), info]
    await session.analysis?.close()
    session.analysis = undefined
    json(res, 200, info)
  }

  async function ask(req: IncomingMessage, res: ServerResponse, session: Session) {
    const { question } = (await body(req)) as { question: string }
    const { detail } = session
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' })
    const send = (type: string, data: unknown) =>
      res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`)
    const run: RunView = {
      id: `r${next++}`,
      question,
      incomplete: false,
      unsupportedNumbers: [],
      status: 'running',
      startedAt: new Date().toISOString(),
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      steps: [],
    }
    detail.runs.push(run)
    detail.questions++
    if (!detail.title) detail.title = question.slice(0, 60)
    detail.status = 'running'
    send('run-start', { runId: run.id, queued: false })
    const stepOf = (n: number): StepView => {
      let step = run.steps.find((s) => s.step === n)
      if (!step) {
        step = { step: n, code: '', stdout: '', stderr: '', results: [], artifacts: [], durationMs: 0 }
        run.steps.push(step)
      }
      return step
    }
    const url = (name: string) => `/api/sessions/${detail.id}/artifacts/${name}`
    try {
      session.analysis ??= await openAnalysis({
        model: options.model,
        data: detail.datasets.map((d) => join(session.dir, d.name)),
        sandbox: { provider: new LocalProvider({ poolSize: 0 }) },
      })
      const { sandbox } = session.analysis
      for await (const event of session.analysis.session.ask(question)) {
        send(event.type, event)
        if (event.type === 'code') stepOf(event.step).code = event.code
        if (event.type === 'stdout') stepOf(event.step).stdout += event.text
        if (event.type === 'stderr') stepOf(event.step).stderr += event.text
        if (event.type === 'error') stepOf(event.step).error = event.error
        if (event.type === 'result') {
          const step = stepOf(event.step)
          const view: ResultView = { isMainResult: event.result.isMainResult, text: event.result.text }
          if (event.result.data) view.data = event.result.data
          if (event.result.png) {
            const name = `step-${event.step}-chart-${step.results.length + 1}.png`
            session.files.set(name, {
              mimeType: 'image/png',
              content: Buffer.from(event.result.png, 'base64'),
            })
            view.image = { name, size: event.result.png.length, mimeType: 'image/png', url: url(name) }
          }
          step.results.push(view)
        }
        if (event.type === 'artifact') {
          const content = await sandbox.files.read(event.artifact.name, { format: 'bytes' })
          session.files.set(event.artifact.name, { mimeType: event.artifact.mimeType, content })
          const view: ArtifactView = { ...event.artifact, url: url(event.artifact.name) }
          stepOf(event.step).artifacts.push(view)
        }
        if (event.type === 'done') {
          run.answer = event.result.answer
          run.unsupportedNumbers = event.result.unsupportedNumbers
          run.incomplete = event.result.incomplete
          run.usage = event.result.usage
          for (const record of event.result.steps) stepOf(record.step).durationMs = record.durationMs
        }
      }
      run.status = 'done'
    } catch (error) {
      run.status = 'failed'
      run.error = (error as Error).message
      send('failed', { message: run.error })
    }
    run.finishedAt = new Date().toISOString()
    detail.status = 'idle'
    detail.updatedAt = run.finishedAt
    res.end()
  }

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    const path = url.pathname
    try {
      if (path === '/healthz') return json(res, 200, { ok: true })
      if (!path.startsWith('/api/')) {
        const file = join(WEB, path === '/' ? 'index.html' : path)
        const served = file.startsWith(WEB) ? file : join(WEB, 'index.html')
        try {
          const content = readFileSync(served)
          res.writeHead(200, { 'Content-Type': TYPES[extname(served)] ?? 'application/octet-stream' })
          return res.end(content)
        } catch {
          res.writeHead(200, { 'Content-Type': TYPES['.html'] })
          return res.end(readFileSync(join(WEB, 'index.html')))
        }
      }
      if (!authorized(req, url)) return fail(res, 401, 'This server needs a token')
      if (path === '/api/sessions' && req.method === 'GET') {
        const list = [...sessions.values()]
          .map(({ detail: { datasets: _d, runs: _r, ...summary } }) => summary)
          .reverse()
        return json(res, 200, list)
      }
      if (path === '/api/sessions' && req.method === 'POST') {
        const body_ = (await body(req)) as { title?: string }
        const id = `s${next++}`
        const now = new Date().toISOString()
        const dir = join(options.home, id)
        mkdirSync(dir, { recursive: true })
        sessions.set(id, {
          dir,
          files: new Map(),
          detail: {
            id,
            title: body_.title ?? '',
            createdAt: now,
            updatedAt: now,
            status: 'idle',
            questions: 0,
            model: options.model.spec,
            datasets: [],
            runs: [],
          },
        })
        return json(res, 201, { id })
      }
      const match = /^\/api\/sessions\/([^/]+)(\/.*)?$/.exec(path)
      const session = match?.[1] ? sessions.get(match[1]) : undefined
      if (!session) return fail(res, 404, 'No such session')
      const rest = match?.[2] ?? ''
      if (rest === '' && req.method === 'GET') return json(res, 200, session.detail)
      if (rest === '' && req.method === 'DELETE') {
        await session.analysis?.close()
        sessions.delete(session.detail.id)
        res.writeHead(204)
        return res.end()
      }
      if (rest === '/files' && req.method === 'POST') return await upload(req, res, session)
      if (rest === '/ask' && req.method === 'POST') return await ask(req, res, session)
      if (rest.startsWith('/artifacts/')) {
        const file = session.files.get(decodeURIComponent(rest.slice('/artifacts/'.length)))
        if (!file) return fail(res, 404, 'No such artifact')
        res.writeHead(200, { 'Content-Type': file.mimeType })
        return res.end(file.content)
      }
      return fail(res, 404, 'Not found')
    } catch (error) {
      if (!res.headersSent) fail(res, 500, (error as Error).message)
      else res.end()
    }
  })
  await new Promise<void>((done) => server.listen(options.port, options.host, done))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${options.host}:${port}`,
    async close() {
      for (const session of sessions.values()) await session.analysis?.close()
      server.closeAllConnections()
      await new Promise<void>((done) => server.close(() => done()))
    },
  }
}
