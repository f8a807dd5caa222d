/**
 * Functions a user deployed on Modal (an embedding model, Stable Diffusion on an A10G…) offered to
 * the analyst as tools: `--modal-tool APP/FUNCTION[=description]`. Each is looked up and called
 * through the SDK's functions API (`.remote()`), with a timeout; what it returns comes back as
 * text for the model, and any bytes in it as files (the step's artifacts). A failure is an
 * observation for the model, not an exception.
 * @module
 */
import type { ModalClient } from 'modal'
import { InvalidArgumentError, SandboxUnavailableError } from '../../errors.js'
import { CREDENTIALS_HINT, fromModal } from './settings.js'

/**
 * A client of the Modal SDK, with the credentials given or else those the SDK finds itself
 * (MODAL_TOKEN_ID/MODAL_TOKEN_SECRET, ~/.modal.toml); a clear error when there are none.
 */
export async function createModalClient(options: {
  tokenId?: string
  tokenSecret?: string
  environment?: string
}): Promise<ModalClient> {
  const { ModalClient } = await import('modal')
  const { tokenId, tokenSecret, environment } = options
  const client = new ModalClient({
    ...(tokenId || tokenSecret ? { tokenId, tokenSecret } : {}),
    ...(environment ? { environment } : {}),
  })
  if (!client.profile.tokenId || !client.profile.tokenSecret) {
    throw new SandboxUnavailableError('Modal credentials are not set', { hint: CREDENTIALS_HINT })
  }
  return client
}

export interface ModalToolSpec {
  app: string
  function: string
  /** What the function does, for the model; else its name says it. */
  description?: string
}

/** `APP/FUNCTION` or `APP/FUNCTION=what it does`. */
export function parseModalTool(value: string): ModalToolSpec {
  const [target = '', ...rest] = value.split('=')
  const match = /^([\w.-]+)\/([\w.-]+)$/.exec(target.trim())
  if (!match?.[1] || !match[2]) {
    throw new InvalidArgumentError(`"${value}" is not a Modal function`, {
      hint: 'A description may follow after =.',
      fix: { setting: 'modalTool', example: 'sd/generate="makes an image from a prompt"' },
    })
  }
  const description = rest.join('=').trim()
  return { app: match[1], function: match[2], ...(description ? { description } : {}) }
}

/** A tool name the model can call: letters, digits and underscores. */
export function toolName(spec: ModalToolSpec): string {
  return `modal_${spec.app}_${spec.function}`.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 64)
}

export function toolDescription(spec: ModalToolSpec): string {
  return `Call the function ${spec.function} of the Modal app ${spec.app}, deployed by the user and run on Modal's cloud${spec.description ? `: ${spec.description}` : ''}. Pass its positional arguments as "args" and keyword arguments as "kwargs" (JSON). Text and numbers it returns come back; bytes it returns are saved as files.`
}

/** A file a function returned (bytes), named after the tool and where it was in the result. */
export interface ReturnedFile {
  name: string
  data: Uint8Array
  mimeType: string
}

export interface ToolOutcome {
  /** For the model: the result as JSON (files by name), or what went wrong. */
  observation: string
  files: ReturnedFile[]
  ok: boolean
}

const MAGIC: Array<[number[], string, string]> = [
  [[0x89, 0x50, 0x4e, 0x47], 'png', 'image/png'],
  [[0xff, 0xd8, 0xff], 'jpg', 'image/jpeg'],
  [[0x25, 0x50, 0x44, 0x46], 'pdf', 'application/pdf'],
  [[0x47, 0x49, 0x46, 0x38], 'gif', 'image/gif'],
]

function fileType(data: Uint8Array): [string, string] {
  for (const [magic, extension, mimeType] of MAGIC) {
    if (magic.every((byte, i) => data[i] === byte)) return [extension, mimeType]
  }
  return ['bin', 'application/octet-stream']
}

/** The result with every bytes value taken out as a file, and its place named in the JSON. */
function separateFiles(value: unknown, prefix: string, files: ReturnedFile[], path: string): unknown {
  if (value instanceof Uint8Array) {
    const [extension, mimeType] = fileType(value)
    const name = `${prefix}${path ? `-${path}` : ''}${files.length ? `-${files.length + 1}` : ''}.${extension}`
    // A plain Uint8Array (the CBOR decoder gives Node's Buffer).
    files.push({ name, data: new Uint8Array(value), mimeType })
    return `<${value.length} bytes, saved as ${name}>`
  }
  if (Array.isArray(value)) return value.map((item, i) => separateFiles(item, prefix, files, `${path}${i}`))
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [
        key,
        separateFiles(item, prefix, files, `${path}${key.replace(/[^\w.-]/g, '_')}`),
      ]),
    )
  }
  return value
}

/** The deployed functions of a Modal account, called as tools. */
export class ModalFunctions {
  constructor(
    private readonly client: () => Promise<ModalClient>,
    private readonly timeoutMs = 300_000,
  ) {}

  /** Finds the function (a clear error when it is not deployed). */
  async lookup(spec: ModalToolSpec) {
    const client = await this.client()
    try {
      return await client.functions.fromName(spec.app, spec.function)
    } catch (error) {
      if ((error as Error).name === 'NotFoundError') {
        throw new InvalidArgumentError(
          `No function ${spec.function} is deployed in the Modal app ${spec.app}`,
          {
            cause: error,
            hint: 'Deploy it with `modal deploy`.',
            fix: { setting: 'modalTool' },
          },
        )
      }
      throw fromModal(error, `looking up ${spec.app}/${spec.function}`)
    }
  }

  /** Calls the function; whatever happens, an outcome for the model. */
  async call(spec: ModalToolSpec, input: { args?: unknown; kwargs?: unknown }): Promise<ToolOutcome> {
    const name = `${spec.app}/${spec.function}`
    const args = input.args === undefined ? [] : input.args
    const kwargs = input.kwargs === undefined ? {} : input.kwargs
    if (!Array.isArray(args) || typeof kwargs !== 'object' || kwargs === null || Array.isArray(kwargs)) {
      return {
        ok: false,
        files: [],
        observation: `The call to ${name} had invalid arguments: give "args" as a JSON array and "kwargs" as a JSON object.`,
      }
    }
    let timer: NodeJS.Timeout | undefined
    try {
      const fn = await this.lookup(spec)
      const result = await Promise.race([
        fn.remote(args, kwargs as Record<string, unknown>),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${this.timeoutMs / 1000} s`)),
            this.timeoutMs,
          )
        }),
      ])
      const files: ReturnedFile[] = []
      const shown = separateFiles(result, toolName(spec), files, '')
      return { ok: true, files, observation: JSON.stringify(shown ?? null, null, 1).slice(0, 20_000) }
    } catch (error) {
      const message = (error as Error).message ?? String(error)
      return { ok: false, files: [], observation: `The Modal function ${name} failed: ${message}` }
    } finally {
      clearTimeout(timer)
    }
  }
}

/** A Modal function as a tool of the analyst's model (the shape `AnalystOptions.tools` takes). */
export interface ModalTool {
  name: string
  description: string
  inputSchema: Record<string, unknown>
  call(input: unknown): Promise<ToolOutcome>
}

const INPUT_SCHEMA = {
  type: 'object',
  properties: {
    args: { type: 'array', description: 'Positional arguments of the function', items: {} },
    kwargs: { type: 'object', description: 'Keyword arguments of the function' },
  },
  additionalProperties: false,
}

/**
 * The tools for `--modal-tool` values: each function looked up now, so that one not deployed is
 * said before any question runs.
 */
export async function modalTools(
  values: string[],
  settings: { tokenId?: string; tokenSecret?: string; environment?: string },
  timeoutMs?: number,
): Promise<ModalTool[]> {
  const specs = values.map(parseModalTool)
  let client: Promise<ModalClient> | undefined
  const functions = new ModalFunctions(() => {
    client ??= createModalClient(settings)
    return client
  }, timeoutMs)
  for (const spec of specs) await functions.lookup(spec)
  return specs.map((spec) => ({
    name: toolName(spec),
    description: toolDescription(spec),
    inputSchema: INPUT_SCHEMA,
    call: (input) => functions.call(spec, (input ?? {}) as { args?: unknown; kwargs?: unknown }),
  }))
}
