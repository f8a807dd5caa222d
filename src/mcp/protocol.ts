/**
 * The parts of the MCP spec (2025-11-25) that the SDK's server leaves out, checked in front of its
 * request handlers, which still do the rest:
 * - a request whose params do not fit its method is -32602 with the first problem in one line
 *   (the SDK answers -32603 with the schema validator's whole report);
 * - an unknown tool is -32602, a protocol error (the SDK answers it as a tool result);
 * - a cursor on a list is -32602: the lists come whole, so no cursor is one this server gave;
 * - a resource that is not there is -32002 with its URI (the SDK answers -32602).
 * Errors inside a known tool stay tool results (`isError`), for the model to read and act on.
 * @module
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js'
import {
  ClientRequestSchema,
  ErrorCode,
  type JSONRPCRequest,
  ListToolsResultSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js'

/** Resource not found, as the spec's resources page names it; the SDK has no constant for it. */
export const RESOURCE_NOT_FOUND = -32002

export function resourceNotFound(uri: string): McpError {
  return new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri })
}

export interface SpecChecks {
  /** Whether a URI is one this server's resources could have (a match of one of its templates). */
  isResourceUri(uri: URL): boolean
}

type Extra = RequestHandlerExtra<never, never>
type Handler = (request: JSONRPCRequest, extra: Extra) => Promise<unknown>
type Params = Record<string, unknown> | undefined

/** Each request the client may send, by its method. */
const REQUESTS = new Map<string, (typeof ClientRequestSchema.options)[number]>(
  ClientRequestSchema.options.map((schema) => [schema.shape.method.value, schema]),
)

const LISTS = new Set(['tools/list', 'resources/list', 'resources/templates/list', 'prompts/list'])

/**
 * Puts the checks in front of every request handler the server has now: call it once every tool
 * and resource is registered (the tools are read once, on the first call).
 */
export function keepToSpec(server: Server, checks: SpecChecks): void {
  const handlers = handlersOf(server)
  const listTools = handlers.get('tools/list')
  let toolNames: Promise<string[]> | undefined
  for (const [method, handler] of handlers) {
    const schema = REQUESTS.get(method)
    if (!schema) continue
    handlers.set(method, async (request, extra) => {
      const parsed = schema.safeParse(request)
      if (!parsed.success) {
        const issue = parsed.error.issues[0]
        const where = issue?.path.length ? `${issue.path.join('.')}: ` : ''
        throw new McpError(
          ErrorCode.InvalidParams,
          `Invalid ${method} request: ${where}${issue?.message ?? 'bad params'}`,
        )
      }
      const params = parsed.data.params as Params
      if (LISTS.has(method) && params?.cursor !== undefined)
        throw new McpError(
          ErrorCode.InvalidParams,
          `Invalid cursor ${JSON.stringify(params.cursor)}: this server sends its lists whole, with no nextCursor; list again without a cursor`,
        )
      if (method === 'tools/call' && listTools) {
        // The tools are those tools/list gives, the SDK's own answer, asked once: they are all
        // registered before the checks go in, and never change.
        toolNames ??= listTools({ jsonrpc: '2.0', id: request.id, method: 'tools/list' }, extra).then(
          (listed) => ListToolsResultSchema.parse(listed).tools.map((tool) => tool.name),
        )
        checkTool(String(params?.name), await toolNames)
      }
      if (method === 'resources/read') checkResource(String(params?.uri), checks)
      return handler(request, extra)
    })
  }
}

function checkTool(name: string, tools: string[]) {
  if (tools.includes(name)) return
  throw new McpError(
    ErrorCode.InvalidParams,
    `Unknown tool: ${name} (this server has ${[...tools].sort().join(', ')})`,
  )
}

function checkResource(uri: string, checks: SpecChecks) {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    throw new McpError(ErrorCode.InvalidParams, `Invalid resources/read request: ${uri} is not a URI`)
  }
  if (!checks.isResourceUri(url)) throw resourceNotFound(uri)
}

/**
 * The server's handlers by method. The SDK has no way to wrap a handler it registered, so this
 * reads its private table; the MCP tests fail loudly if a new SDK renames it.
 */
function handlersOf(server: Server): Map<string, Handler> {
  const handlers = (server as unknown as { _requestHandlers?: unknown })._requestHandlers
  if (!(handlers instanceof Map))
    throw new Error(
      'The MCP SDK has changed: its Server keeps no _requestHandlers map to check requests in front of',
    )
  return handlers as Map<string, Handler>
}
