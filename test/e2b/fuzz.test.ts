/**
 * Odd requests (issue #37): a seeded fuzzing pass over E2B's routes (the control plane, envd's
 * `/files` and Connect RPCs, the code interpreter) and over /api (driven by the OpenAPI document),
 * with odd paths planted in a real sandbox's workspace: links (a loop, a dangling one, one leading
 * out), a fifo, a unix socket, odd names, a 255-byte name, a 4096+ byte path, `..`, NUL; wrong
 * types, missing and extra fields, empty and huge bodies, wrong content types, bad Connect
 * envelopes, unknown ids, wrong methods. No answer may be a 500 or Connect's `internal`, every
 * error says what is wrong, each request is answered within its deadline (a fifo never blocks the
 * server), and the sandbox still answers `1 + 1` afterwards.
 *
 * A failure prints the seed and the request; FUZZ_SEED=<seed> replays that very sequence.
 */
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openApiDocument } from '../../src/server/openapi.js'
import { type E2BServer, startE2BServer } from './server.js'

const SEED = Number(process.env.FUZZ_SEED ?? 37)
/** How long one request may take on a loaded machine before it counts as hung. */
const DEADLINE_MS = 20_000
const ENVD = '49983'
const INTERPRETER = '49999'
const ODD = '/home/user/odd'
/** Statuses a client can cause; 502 is E2B's edge for a sandbox that is not there, 501 a route Analyst does not serve. */
const EXPECTED = new Set([
  200, 201, 204, 400, 401, 403, 404, 405, 409, 410, 413, 415, 416, 422, 429, 501, 502,
])
/** Connect codes that are a server's fault. */
const SERVER_FAULTS = new Set(['internal', 'unknown', 'data_loss'])

/** mulberry32: small, seeded, the same sequence on every machine. */
function generator(seed: number) {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return {
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T,
    chance: (p: number) => next() < p,
    shuffle: <T>(items: T[]): T[] => {
      for (let i = items.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1))
        ;[items[i], items[j]] = [items[j] as T, items[i] as T]
      }
      return items
    },
  }
}

const DEEP = Array.from({ length: 18 }, (_, i) => `${i}`.padEnd(240, 'd')).join('/') // > 4096 bytes
/** Paths that mean something odd in the workspace, and paths that try to leave it. */
const PATHS = [
  `${ODD}/file.txt`,
  `${ODD}/dir`,
  `${ODD}/link`,
  `${ODD}/link-dir`,
  `${ODD}/loop-a`,
  `${ODD}/dangling`,
  `${ODD}/outside`,
  `${ODD}/outside-dir`,
  `${ODD}/outside-dir/passwd`,
  `${ODD}/fifo`,
  `${ODD}/sock`,
  `${ODD}/new\nline`,
  `${ODD}/ünï😀`,
  `${ODD}/100%`,
  `${ODD}/a b`,
  `${ODD}/${'n'.repeat(255)}`,
  `${ODD}/${'n'.repeat(256)}`,
  `${ODD}/${DEEP}`,
  `${ODD}/${DEEP}/f`,
  `${ODD}/file.txt/sub`,
  `${ODD}/fifo/x`,
  `${ODD}/link-dir/x`,
  `${ODD}/loop-a/x`,
  `${ODD}/nul\0byte`,
  '../etc/passwd',
  '/home/user/../../etc/passwd',
  'odd/../../../root',
  'data/../../etc',
  '/etc/passwd',
  '/proc/self/environ',
  '/tmp',
  '/tmp/../etc/shadow',
  '',
  '.',
  '/',
  '/home/user',
  'data',
  'data/nothing.csv',
  '//home//user//odd//',
  '~',
  '..\\..\\windows',
  'x'.repeat(70_000),
]
const WRONG_VALUES: unknown[] = [
  1,
  -1,
  1.5,
  true,
  null,
  [],
  {},
  ['a'],
  { path: 'x' },
  'x'.repeat(100_000),
  2 ** 64,
]

interface Request {
  /** What it is, for the failure message. */
  label: string
  method: string
  path: string
  headers?: Record<string, string>
  body?: string | Uint8Array
  /** Changes or removes what later requests use: sent after the others. */
  destructive?: boolean
}

interface Answer {
  status: number
  type: string
  bytes: Uint8Array
}

let e2b: E2BServer
let sandbox: { id: string; envd: string; traffic: string }
let sessionId: string

async function send(request: Request): Promise<Answer | string> {
  try {
    const response = await fetch(`${e2b.url}${request.path}`, {
      method: request.method,
      headers: request.headers,
      body: request.method === 'GET' || request.method === 'HEAD' ? undefined : (request.body as BodyInit),
      signal: AbortSignal.timeout(DEADLINE_MS),
    })
    const bytes = new Uint8Array(await response.arrayBuffer())
    return { status: response.status, type: response.headers.get('content-type') ?? '', bytes }
  } catch (error) {
    return `no answer: ${(error as Error).message}`
  }
}

/** The JSON of a body, or undefined. */
function json(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes))
  } catch {
    return undefined
  }
}

/** A Connect stream's envelopes: flags and the JSON of each. */
function envelopes(bytes: Uint8Array): Array<{ flags: number; data: unknown }> | undefined {
  const found: Array<{ flags: number; data: unknown }> = []
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  for (let at = 0; at < bytes.length; ) {
    if (at + 5 > bytes.length) return undefined
    const length = view.getUint32(at + 1)
    if (at + 5 + length > bytes.length) return undefined
    found.push({ flags: bytes[at] as number, data: json(bytes.subarray(at + 5, at + 5 + length)) })
    at += 5 + length
  }
  return found
}

const messageOf = (body: unknown): unknown => {
  const value = body as { message?: unknown; error?: { message?: unknown } } | undefined
  return value?.error?.message ?? value?.message
}

/** What is wrong with an answer, if anything. */
function problem(request: Request, answer: Answer | string): string | undefined {
  if (typeof answer === 'string') return answer
  const { status, type, bytes } = answer
  const text = new TextDecoder().decode(bytes)
  if (!EXPECTED.has(status)) return `status ${status}: ${text.slice(0, 300)}`
  if (/\[internal\]|Cannot read properties|is not a function|\n\s+at .+:\d+:\d+/.test(text))
    return `a server fault in the body (${status}): ${text.slice(0, 300)}`
  if (type.startsWith('application/connect+json')) {
    const frames = envelopes(bytes)
    if (!frames) return `a malformed Connect stream (${status}): ${text.slice(0, 200)}`
    const end = frames.at(-1)
    const error = (end?.data as { error?: { code?: string; message?: string } } | undefined)?.error
    if (end?.flags !== 2) return 'a Connect stream without its end'
    if (error && (SERVER_FAULTS.has(error.code ?? '') || !error.message))
      return `Connect error ${error.code}: ${error.message}`
    return undefined
  }
  if (status < 400) return undefined
  const body = json(bytes)
  if (type.startsWith('application/json')) {
    const code = (body as { code?: unknown } | undefined)?.code
    if (typeof code === 'string' && SERVER_FAULTS.has(code)) return `Connect error ${code}: ${text}`
    const message = messageOf(body)
    if (typeof message !== 'string' || !message.trim()) return `an error without a message: ${text}`
    return undefined
  }
  // E2B's code interpreter and its edge answer errors in plain text, as E2B's own do.
  const plain = request.headers?.['e2b-sandbox-port'] === INTERPRETER || status === 502
  if (plain && type.startsWith('text/plain') && text.trim()) return undefined
  return `an error that is not JSON with a message (${status}, ${type}): ${text.slice(0, 200)}`
}

const describeRequest = (request: Request) => {
  const body =
    request.body === undefined
      ? ''
      : typeof request.body === 'string'
        ? request.body.slice(0, 300)
        : `<${request.body.length} bytes: ${Buffer.from(request.body.subarray(0, 40)).toString('hex')}>`
  const headers = Object.entries(request.headers ?? {})
    .filter(([name]) => !/token|authorization|api-key/.test(name))
    .map(([name, value]) => `${name}: ${value.slice(0, 80)}`)
  return `${request.label}\n  ${request.method} ${request.path.slice(0, 300)}\n  ${headers.join('\n  ')}\n  ${body}`
}

/** A Connect envelope: flags, a big-endian length, the data. */
function envelope(data: Uint8Array, flags = 0, length = data.length): Uint8Array {
  const frame = new Uint8Array(5 + data.length)
  frame[0] = flags
  new DataView(frame.buffer).setUint32(1, length)
  frame.set(data, 5)
  return frame
}

/** 300 MiB of zeros in 300 gzip members of 1 MiB each (gunzip reads them all): past envd's 256 MiB. */
const GZIP_BOMB = Buffer.concat(Array(300).fill(gzipSync(Buffer.alloc(1024 ** 2))))

/** Past /api's 4 MiB of JSON: made once, sent to every route that takes a body. */
const HUGE_QUESTION = JSON.stringify({ question: 'x'.repeat(5 * 1024 ** 2) })

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value))

/** The requests of the pass, from the seed: each route and RPC, with odd paths and odd bodies. */
function requests(seed: number): Request[] {
  const random = generator(seed)
  const { pick, chance } = random
  const list: Request[] = []
  const envdHeaders = (extra: Record<string, string> = {}) => ({
    'e2b-sandbox-id': sandbox.id,
    'e2b-sandbox-port': ENVD,
    'x-access-token': sandbox.envd,
    ...extra,
  })
  const oddPath = () => pick(PATHS)
  const oddValue = () => pick(WRONG_VALUES)

  // envd's unary RPCs in Connect's JSON, with odd paths, wrong types, missing and extra fields.
  const unary: Record<string, () => unknown> = {
    '/filesystem.Filesystem/Stat': () => ({ path: oddPath() }),
    '/filesystem.Filesystem/ListDir': () => ({ path: oddPath(), depth: pick([0, 1, 3, 1000, -1]) }),
    '/filesystem.Filesystem/MakeDir': () => ({ path: oddPath() }),
    '/process.Process/List': () => ({}),
    '/process.Process/SendInput': () => ({
      process: pick([{ pid: 999_999 }, { tag: 'nope' }, {}, { pid: 1 }]),
      input: pick([{ stdin: 'aGVsbG8=' }, { pty: 'aGk=' }, {}, undefined]),
    }),
    '/process.Process/Update': () => ({
      process: pick([{ pid: 999_999 }, { tag: 'x' }, {}]),
      pty: pick([{ size: { cols: 0, rows: 0 } }, { size: { cols: 4_294_967_295, rows: 1 } }, {}, undefined]),
    }),
    '/process.Process/CloseStdin': () => ({
      process: pick([{ pid: 999_999 }, { tag: 'x' }, {}, { pid: 0 }]),
    }),
    '/process.Process/SendSignal': () => ({
      process: pick([{ pid: 999_999 }, { tag: 'x' }, {}, { pid: 1 }]),
      signal: pick(['SIGNAL_SIGKILL', 'SIGNAL_SIGTERM', 'SIGNAL_UNSPECIFIED', 77]),
    }),
  }
  const destructive: Record<string, () => unknown> = {
    '/filesystem.Filesystem/Move': () => ({ source: oddPath(), destination: oddPath() }),
    '/filesystem.Filesystem/Remove': () => ({ path: oddPath() }),
  }
  const streams: Record<string, () => unknown> = {
    '/filesystem.Filesystem/WatchDir': () => ({ path: oddPath(), recursive: chance(0.5) }),
    '/process.Process/Start': () => ({
      process: {
        cmd: pick(['/bin/bash', '/nonexistent', '', 'echo', `${ODD}/fifo`]),
        args: pick([['-l', '-c', 'echo hi'], [], ['x\u0000y'], ['a'.repeat(10_000)]]),
        envs: pick([{}, { A: 'b' }, { 'A=B': 'c' }, { '': 'x' }, { NUL: 'a\u0000b' }]),
        ...(chance(0.5) ? { cwd: oddPath() } : {}),
      },
      ...(chance(0.3) ? { pty: { size: { cols: pick([0, 80, 100_000]), rows: 24 } } } : {}),
    }),
    '/process.Process/Connect': () => ({ process: pick([{ pid: 999_999 }, { tag: 'x' }, {}, { pid: 1 }]) }),
  }

  const connectJson = (path: string, body: string | Uint8Array, extra: Record<string, string> = {}) => ({
    method: 'POST',
    path,
    headers: envdHeaders({ 'content-type': 'application/json', 'connect-protocol-version': '1', ...extra }),
    body,
  })
  for (const [rpc, make] of [...Object.entries(unary), ...Object.entries(destructive)]) {
    const isDestructive = rpc in destructive
    for (let i = 0; i < 8; i++)
      list.push({
        label: `${rpc} with odd paths`,
        ...connectJson(rpc, JSON.stringify(make())),
        destructive: isDestructive,
      })
    const fields = Object.keys((make() as object) ?? {})
    for (const field of fields.length > 0 ? fields : ['path'])
      list.push({
        label: `${rpc}: ${field} of a wrong type`,
        ...connectJson(rpc, JSON.stringify({ ...(make() as object), [field]: oddValue() })),
        destructive: isDestructive,
      })
    list.push({
      label: `${rpc}: an extra field`,
      ...connectJson(rpc, JSON.stringify({ ...(make() as object), extra: 1 })),
    })
    list.push({ label: `${rpc}: an empty body`, ...connectJson(rpc, '') })
    list.push({ label: `${rpc}: not JSON`, ...connectJson(rpc, pick(['{', 'null', '[]', '"x"', '\u0000'])) })
    list.push({
      label: `${rpc}: garbage protobuf`,
      ...connectJson(rpc, new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2]), {
        'content-type': 'application/proto',
      }),
    })
    list.push({
      label: `${rpc}: a wrong content type`,
      ...connectJson(rpc, '{}', {
        'content-type': pick(['text/plain', 'application/xml', 'multipart/form-data']),
      }),
    })
    list.push({ label: `${rpc}: GET`, method: 'GET', path: rpc, headers: envdHeaders() })
  }
  list.push({
    label: 'a huge unary RPC',
    ...connectJson('/filesystem.Filesystem/Stat', JSON.stringify({ path: 'x'.repeat(17 * 1024 ** 2) })),
  })
  list.push({ label: 'an RPC that does not exist', ...connectJson('/filesystem.Filesystem/Nope', '{}') })
  list.push({ label: 'a service that does not exist', ...connectJson('/nope.Nope/Stat', '{}') })
  list.push({
    label: 'a client stream (StreamInput)',
    ...connectJson('/process.Process/StreamInput', envelope(encode({})), {
      'content-type': 'application/connect+json',
    }),
  })

  // Server streams, enveloped, with a deadline so that a valid one ends; then bad envelopes.
  const streamHeaders = { 'content-type': 'application/connect+json', 'connect-timeout-ms': '1500' }
  for (const [rpc, make] of Object.entries(streams)) {
    for (let i = 0; i < 6; i++)
      list.push({
        label: `${rpc} with odd input`,
        ...connectJson(rpc, envelope(encode(make())), streamHeaders),
      })
    const good = encode(make())
    const bad: Array<[string, Uint8Array]> = [
      ['an envelope flagged compressed', envelope(good, 1)],
      ['an envelope flagged end-stream', envelope(good, 2)],
      ['an envelope with every flag', envelope(good, 0xff)],
      ['a length larger than the body', envelope(good, 0, good.length + 1000)],
      ['a length of 4 GiB', envelope(good, 0, 0xffffffff)],
      ['a truncated prefix', envelope(good).subarray(0, 3)],
      ['two envelopes', new Uint8Array([...envelope(good), ...envelope(good)])],
      ['an empty envelope', envelope(new Uint8Array())],
      ['no body', new Uint8Array()],
      ['unframed JSON', good],
      ['a wrong type inside', envelope(encode({ path: 5, process: 'x' }))],
    ]
    for (const [what, body] of bad)
      list.push({ label: `${rpc}: ${what}`, ...connectJson(rpc, body, streamHeaders) })
    list.push({ label: `${rpc}: as unary JSON`, ...connectJson(rpc, JSON.stringify(make())) })
  }

  // envd's /files: download and upload at odd paths, odd bodies and content types.
  const filesUrl = (path: string | undefined, more = '') =>
    `/files${path === undefined ? '' : `?path=${encodeURIComponent(path)}`}${more}`
  for (let i = 0; i < 24; i++)
    list.push({
      label: 'GET /files at an odd path',
      method: 'GET',
      path: filesUrl(oddPath()),
      headers: envdHeaders(),
    })
  for (let i = 0; i < 16; i++) {
    const form = chance(0.5)
    const boundary = 'fuzzboundary'
    const name = pick(['a.txt', '../../escape', 'x\u0000y', '', 'n'.repeat(300), 'new\nline'])
    list.push({
      label: 'POST /files at an odd path',
      method: 'POST',
      path: filesUrl(chance(0.8) ? oddPath() : undefined),
      headers: envdHeaders({
        'content-type': form ? `multipart/form-data; boundary=${boundary}` : 'application/octet-stream',
      }),
      body: form
        ? `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n\r\nhello\r\n--${boundary}--\r\n`
        : 'hello',
      destructive: true,
    })
  }
  const uploads: Array<[string, Record<string, string>, string | Uint8Array]> = [
    [
      'a truncated multipart body',
      { 'content-type': 'multipart/form-data; boundary=b' },
      '--b\r\nContent-Disp',
    ],
    ['multipart without a boundary', { 'content-type': 'multipart/form-data' }, 'x'],
    ['multipart without a file', { 'content-type': 'multipart/form-data; boundary=b' }, '--b--\r\n'],
    ['gzip that is not gzip', { 'content-encoding': 'gzip' }, 'not gzip at all'],
    ['a gzip bomb past the upload limit', { 'content-encoding': 'gzip' }, GZIP_BOMB],
    ['an unknown encoding', { 'content-encoding': 'br' }, 'x'],
    ['metadata headers', { 'x-metadata-a': 'b' }, 'x'],
  ]
  for (const [what, headers, body] of uploads)
    list.push({
      label: `POST /files: ${what}`,
      method: 'POST',
      path: filesUrl(`${ODD}/upload.txt`),
      headers: envdHeaders(headers),
      body,
      destructive: true,
    })
  list.push({ label: 'GET /files without a path', method: 'GET', path: '/files', headers: envdHeaders() })
  list.push({
    label: 'GET /files with two paths',
    method: 'GET',
    path: '/files?path=a&path=b',
    headers: envdHeaders(),
  })
  list.push({
    label: 'a bad signature',
    method: 'GET',
    path: '/files?path=x&signature=v1_bad&signature_expiration=1',
  })
  list.push({
    label: 'a signature for an odd path',
    method: 'POST',
    path: `/files?path=%00&signature=${'a'.repeat(5000)}`,
  })
  list.push({ label: 'PUT /files', method: 'PUT', path: filesUrl('x'), headers: envdHeaders(), body: 'x' })
  list.push({ label: 'DELETE /files', method: 'DELETE', path: filesUrl('x'), headers: envdHeaders() })
  list.push({
    label: 'envd without its token',
    method: 'GET',
    path: filesUrl('x'),
    headers: { ...envdHeaders(), 'x-access-token': 'no' },
  })

  // Calls into sandboxes that are not there, or on ports that are not served.
  for (const id of ['', 'nope', 'i'.repeat(5000), '../v2/sandboxes', '%00'])
    list.push({
      label: 'an unknown sandbox',
      method: 'POST',
      path: '/filesystem.Filesystem/Stat',
      headers: { ...envdHeaders({ 'content-type': 'application/json' }), 'e2b-sandbox-id': id },
      body: '{"path":"x"}',
    })
  list.push({
    label: 'an unknown port',
    method: 'GET',
    path: '/',
    headers: envdHeaders({ 'e2b-sandbox-port': '8080' }),
  })
  list.push({
    label: 'a port that is not a number',
    method: 'GET',
    path: '/',
    headers: envdHeaders({ 'e2b-sandbox-port': 'x'.repeat(3000) }),
  })

  // The code interpreter: /execute and contexts with wrong types, unknown contexts, odd folders.
  const interpreterHeaders = (extra: Record<string, string> = {}) => ({
    'e2b-sandbox-id': sandbox.id,
    'e2b-sandbox-port': INTERPRETER,
    'e2b-traffic-access-token': sandbox.traffic,
    'content-type': 'application/json',
    ...extra,
  })
  const executes: unknown[] = [
    { code: oddValue() },
    { code: '1', context_id: 'nope' },
    { code: '1', context_id: oddValue() },
    { code: '1', language: 'cobol' },
    { code: '1', language: oddValue() },
    { code: '1', language: 'python', context_id: 'default' },
    { code: '1', env_vars: { A: oddValue() } },
    { code: '1', env_vars: oddValue() },
    {},
    null,
    [],
  ]
  for (const body of executes)
    list.push({
      label: '/execute with a wrong body',
      method: 'POST',
      path: '/execute',
      headers: interpreterHeaders(),
      body: JSON.stringify(body),
    })
  list.push({
    label: '/execute: not JSON',
    method: 'POST',
    path: '/execute',
    headers: interpreterHeaders(),
    body: '{',
  })
  list.push({
    label: '/execute: huge',
    method: 'POST',
    path: '/execute',
    headers: interpreterHeaders(),
    body: JSON.stringify({ code: `#${'x'.repeat(17 * 1024 ** 2)}` }),
  })
  for (let i = 0; i < 6; i++)
    list.push({
      label: 'a context in an odd folder',
      method: 'POST',
      path: '/contexts',
      headers: interpreterHeaders(),
      body: JSON.stringify(
        chance(0.7) ? { cwd: oddPath(), language: 'python' } : { language: oddValue(), cwd: oddValue() },
      ),
    })
  for (const id of ['nope', '%00', 'default-cobol', 'x'.repeat(3000)]) {
    list.push({
      label: 'restart an unknown context',
      method: 'POST',
      path: `/contexts/${id}/restart`,
      headers: interpreterHeaders(),
    })
    list.push({
      label: 'remove an unknown context',
      method: 'DELETE',
      path: `/contexts/${id}`,
      headers: interpreterHeaders(),
    })
  }
  list.push({ label: 'GET /execute', method: 'GET', path: '/execute', headers: interpreterHeaders() })
  list.push({
    label: 'the interpreter without its token',
    method: 'GET',
    path: '/contexts',
    headers: interpreterHeaders({ 'e2b-traffic-access-token': 'no' }),
  })

  // The control plane: create with wrong bodies (never a valid one), and unknown ids everywhere.
  const control = (extra: Record<string, string> = {}) => ({
    'x-api-key': e2b.token,
    'content-type': 'application/json',
    ...extra,
  })
  const creates: unknown[] = [
    {},
    null,
    [],
    'x',
    { templateID: oddValue() },
    { templateID: 'nope' },
    { templateID: '../../etc' },
    { templateID: 'base', timeout: oddValue() },
    { templateID: 'base', timeout: -1 },
    { templateID: 'base', envVars: oddValue() },
    { templateID: 'base', metadata: { a: oddValue() } },
    { templateID: 'base', memoryMB: oddValue() },
    { templateID: 'base', memoryMB: 1 },
    { templateID: 'base', cpuCount: 0 },
    { templateID: 'base', allow_internet_access: true },
    { templateID: 'base', autoResume: oddValue() },
    { templateID: 'base', network: { allowOut: ['1.1.1.1'] } },
    { templateID: 'base', volumeMounts: [{}] },
  ]
  for (const body of creates)
    list.push({
      label: 'create with a wrong body',
      method: 'POST',
      path: '/v2/sandboxes',
      headers: control(),
      body: JSON.stringify(body),
    })
  list.push({
    label: 'create: not JSON',
    method: 'POST',
    path: '/v2/sandboxes',
    headers: control(),
    body: '{"templateID":',
  })
  list.push({
    label: 'create: huge',
    method: 'POST',
    path: '/v2/sandboxes',
    headers: control(),
    body: JSON.stringify({ templateID: 'nope', metadata: { a: 'x'.repeat(5 * 1024 ** 2) } }),
  })
  list.push({
    label: 'create: no key',
    method: 'POST',
    path: '/v2/sandboxes',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  })
  const unknownId = () => pick(['nope', 'i'.repeat(3000), '%00', '..', '%2e%2e'])
  for (let i = 0; i < 4; i++) {
    const id = unknownId()
    list.push({
      label: 'get an unknown sandbox',
      method: 'GET',
      path: `/sandboxes/${id}`,
      headers: control(),
    })
    list.push({
      label: 'kill an unknown sandbox',
      method: 'DELETE',
      path: `/sandboxes/${id}`,
      headers: control(),
    })
    list.push({
      label: 'pause an unknown sandbox',
      method: 'POST',
      path: `/sandboxes/${id}/pause`,
      headers: control(),
    })
    list.push({
      label: 'connect an unknown sandbox',
      method: 'POST',
      path: `/v2/sandboxes/${id}/connect`,
      headers: control(),
      body: '{}',
    })
    list.push({
      label: 'metrics of an unknown sandbox',
      method: 'GET',
      path: `/sandboxes/${id}/metrics`,
      headers: control(),
    })
  }
  for (const body of [{ timeout: 'x' }, { timeout: -5 }, { timeout: 1e12 }, {}, [], null, { timeout: 1.5 }])
    list.push({
      label: 'a wrong timeout',
      method: 'POST',
      path: `/sandboxes/${sandbox.id}/timeout`,
      headers: control(),
      body: JSON.stringify(body),
    })
  for (const body of [{ timeout: 'x' }, { timeout: -5 }, [], 'x'])
    list.push({
      label: 'connect with a wrong body',
      method: 'POST',
      path: `/v2/sandboxes/${sandbox.id}/connect`,
      headers: control(),
      body: JSON.stringify(body),
    })
  for (const query of ['start=x', 'end=-1', 'start=1e99', 'start=%00'])
    list.push({
      label: 'metrics with a wrong range',
      method: 'GET',
      path: `/sandboxes/${sandbox.id}/metrics?${query}`,
      headers: control(),
    })
  for (const query of [
    'order=sideways',
    'startedAfter=yesterday',
    'nextToken=x',
    'limit=-1',
    'limit=x',
    'state=%00',
    'metadata=%ZZ',
  ])
    list.push({
      label: 'a list with a wrong query',
      method: 'GET',
      path: `/v2/sandboxes?${query}`,
      headers: control(),
    })
  for (const [method, path] of [
    ['PATCH', '/v2/sandboxes'],
    ['PUT', `/sandboxes/${sandbox.id}`],
    ['GET', `/sandboxes/${sandbox.id}/pause`],
    ['POST', `/sandboxes/${sandbox.id}/fork`],
    ['GET', '/v3/templates/nope'],
    ['POST', '/v3/templates'],
    ['GET', '/templates/nope/files/zz'],
    ['PUT', `/templates/nope/files/${'0'.repeat(64)}?upload=x`],
    ['DELETE', '/templates/%00'],
    ['GET', '/volumes'],
  ] as const)
    list.push({
      label: `${method} ${path}`,
      method,
      path,
      headers: control(),
      body: method === 'GET' ? undefined : '{"x":',
    })

  // /api, from the OpenAPI document: each path and method, with real and unknown ids, odd names,
  // wrong bodies, and methods it does not have.
  const api = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${e2b.token}`, ...extra })
  const fill = (template: string) =>
    template.replace(/\{(\w+)\}/g, (_, name: string) => {
      if (name === 'id') return pick([sessionId, sessionId, 'nope', '%00', 'x'.repeat(3000)])
      if (name === 'name')
        return encodeURIComponent(
          pick(['data.csv', '../../etc/passwd', 'a\u0000b', 'n'.repeat(300), 'new\nline', '%']),
        )
      return pick(['nope', '0', '-1', 'x'.repeat(3000), '%00'])
    })
  const bodies = (): Array<[string, string, string]> => [
    ['an empty body', '', 'application/json'],
    ['not JSON', '{"a":', 'application/json'],
    ['a JSON array', '[]', 'application/json'],
    ['JSON null', 'null', 'application/json'],
    ['extra fields', JSON.stringify({ nope: 1, title: 'x', question: 'x' }), 'application/json'],
    [
      'wrong types',
      JSON.stringify({
        title: oddValue(),
        question: oddValue(),
        code: oddValue(),
        sources: oddValue(),
        template: oddValue(),
        keepRunning: 'yes',
        from: -1,
      }),
      'application/json',
    ],
    [
      'a wrong content type',
      '{}',
      pick(['text/plain', 'application/xml', 'multipart/form-data; boundary=x']),
    ],
    ['a huge body', HUGE_QUESTION, 'application/json'],
  ]
  for (const [template, operations] of Object.entries(openApiDocument.paths)) {
    if (!template.startsWith('/api/')) continue
    const methods = Object.keys(operations)
      .filter((key) => ['get', 'post', 'put', 'patch', 'delete'].includes(key))
      .map((m) => m.toUpperCase())
    for (const method of methods) {
      const sends = method === 'POST' || method === 'PUT' || method === 'PATCH'
      const rounds = sends ? bodies() : [['no body', '', ''] as [string, string, string]]
      for (const [what, body, type] of rounds)
        list.push({
          label: `${method} ${template}: ${what}`,
          method,
          path: fill(template),
          headers: api(type ? { 'content-type': type } : {}),
          body: sends ? body : undefined,
          destructive: method === 'DELETE',
        })
    }
    list.push({
      label: `PATCH ${template}`,
      method: 'PATCH',
      path: fill(template),
      headers: api(),
      body: '{}',
    })
    list.push({ label: `${template} without a token`, method: 'GET', path: fill(template) })
  }
  const form = (name: string, content: string, boundary = 'fz') =>
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: text/csv\r\n\r\n${content}\r\n--${boundary}--\r\n`
  const uploadsToApi: Array<[string, string, string]> = [
    [
      'an odd file name',
      form(pick(['../../x.csv', 'a\u0000b.csv', 'new\nline.csv', 'n'.repeat(300), '', '..']), 'a,b\n1,2\n'),
      'multipart/form-data; boundary=fz',
    ],
    ['an empty file', form('e.csv', ''), 'multipart/form-data; boundary=fz'],
    ['a truncated form', '--fz\r\nContent-Disposition: form-da', 'multipart/form-data; boundary=fz'],
    ['a form without a boundary', form('a.csv', 'x'), 'multipart/form-data'],
    ['a file over the limit', form('big.csv', 'x'.repeat(2 * 1024 ** 2)), 'multipart/form-data; boundary=fz'],
    ['not a form', 'a,b\n1,2\n', 'text/csv'],
  ]
  for (const [what, body, type] of uploadsToApi)
    list.push({
      label: `upload: ${what}`,
      method: 'POST',
      path: `/api/sessions/${sessionId}/files`,
      headers: api({ 'content-type': type }),
      body,
    })
  for (const name of ['../../etc/passwd', '%00', 'a%2Fb', '%', 'x'.repeat(5000)]) {
    list.push({
      label: 'an odd artifact name',
      method: 'GET',
      path: `/api/sessions/${sessionId}/artifacts/${name}`,
      headers: api(),
    })
    list.push({
      label: 'an odd data file name',
      method: 'GET',
      path: `/api/sessions/${sessionId}/files/${name}`,
      headers: api(),
    })
  }
  for (const query of ['format=exe', 'format=', 'format=%00'])
    list.push({
      label: 'an export in an odd format',
      method: 'GET',
      path: `/api/sessions/${sessionId}/export?${query}`,
      headers: api(),
    })
  list.push({
    label: 'run events after an odd step',
    method: 'GET',
    path: `/api/sessions/${sessionId}/runs/nope/events?after=x`,
    headers: api({ 'last-event-id': 'NaN' }),
  })
  list.push({ label: 'a route that is not there', method: 'GET', path: '/api/nope', headers: api() })
  list.push({
    label: 'a bad token',
    method: 'GET',
    path: '/api/sessions',
    headers: { authorization: 'Bearer no' },
  })
  list.push({
    label: 'a malformed authorization',
    method: 'GET',
    path: '/api/sessions',
    headers: { authorization: 'Basic %%%' },
  })

  // Non-destructive requests in a seeded order; then what changes the fixtures, in a seeded order.
  return [
    ...random.shuffle(list.filter((r) => !r.destructive)),
    ...random.shuffle(list.filter((r) => r.destructive)),
  ]
}

/** Python that plants the odd paths in the workspace (and keeps a unix socket listening). */
const PLANT = `
import os, socket
os.makedirs('odd/dir', exist_ok=True)
os.chdir('odd')
open('file.txt', 'w').write('x')
os.symlink('file.txt', 'link'); os.symlink('dir', 'link-dir')
os.symlink('loop-b', 'loop-a'); os.symlink('loop-a', 'loop-b')
os.symlink('nowhere', 'dangling'); os.symlink('/etc/passwd', 'outside'); os.symlink('/etc', 'outside-dir')
os.mkfifo('fifo')
_sock = socket.socket(socket.AF_UNIX); _sock.bind('sock'); _sock.listen()
for name in ['new\\nline', 'ünï😀', '100%', 'a b', 'n' * 255]:
    open(name, 'w').write(name)
for part in ${JSON.stringify(DEEP.split('/'))}:
    os.mkdir(part); os.chdir(part)
open('f', 'w').write('deep')
os.chdir('/home/user')
print('planted')
`

async function execute(code: string): Promise<string> {
  const response = await fetch(`${e2b.url}/execute`, {
    method: 'POST',
    headers: {
      'e2b-sandbox-id': sandbox.id,
      'e2b-sandbox-port': INTERPRETER,
      'e2b-traffic-access-token': sandbox.traffic,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ code }),
  })
  return response.text()
}

beforeAll(async () => {
  e2b = await startE2BServer({ maxUploadBytes: 1024 ** 2 })
  const created = await fetch(`${e2b.url}/v2/sandboxes`, {
    method: 'POST',
    headers: { 'x-api-key': e2b.token, 'content-type': 'application/json' },
    body: JSON.stringify({ templateID: 'code-interpreter-v1', timeout: 600 }),
  })
  const made = (await created.json()) as {
    sandboxID: string
    envdAccessToken: string
    trafficAccessToken: string
  }
  sandbox = { id: made.sandboxID, envd: made.envdAccessToken, traffic: made.trafficAccessToken }
  expect(await execute(PLANT)).toContain('planted')
  const session = await fetch(`${e2b.url}/api/sessions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${e2b.token}`, 'content-type': 'application/json' },
    body: '{"title":"fuzz"}',
  })
  sessionId = ((await session.json()) as { id: string }).id
}, 120_000)

afterAll(async () => {
  await e2b?.close()
})

describe('odd requests (seeded fuzzing)', () => {
  it('answers every one with a client status and a message, never a 500 or internal, within its deadline', async () => {
    const failures: string[] = []
    const sent = requests(SEED)
    for (const [index, request] of sent.entries()) {
      const wrong = problem(request, await send(request))
      if (wrong) failures.push(`#${index} ${describeRequest(request)}\n  → ${wrong}`)
    }
    expect(sent.length).toBeGreaterThan(300)
    expect(
      failures,
      `seed ${SEED} (FUZZ_SEED=${SEED} replays it): ${failures.length} of ${sent.length}\n${failures.join('\n')}`,
    ).toEqual([])

    // Still alive, and the sandbox still computes.
    expect((await fetch(`${e2b.url}/healthz`)).status).toBe(200)
    expect(await execute('1 + 1')).toContain('"text":"2"')
  }, 600_000)
})
