/**
 * Calling MCP tools through the official client, for tests: the result typed as a tool result,
 * its text in one string; and the protocol errors that every transport must answer as the
 * 2025-11-25 spec has them.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js'
import {
  type CallToolResult,
  CallToolResultSchema,
  ErrorCode,
  McpError,
} from '@modelcontextprotocol/sdk/types.js'
import { expect } from 'vitest'

/** The tools Analyst's MCP server offers, in order of name. */
export const TOOL_NAMES = ['add_data', 'ask_analyst', 'list_data', 'profile_data', 'run_python']

export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  options?: RequestOptions,
): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args }, undefined, options)) as CallToolResult
}

/** The text parts of a tool result, joined by newlines. */
export function textOf(result: CallToolResult): string {
  return result.content
    .filter((c) => c.type === 'text')
    .map((c) => (c as { text: string }).text)
    .join('\n')
}

/** ask_analyst with the progress messages it sent along the way. */
export async function askAnalyst(
  client: Client,
  question: string,
  options: { signal?: AbortSignal; progress?: string[] } = {},
): Promise<{ result: CallToolResult; progress: string[] }> {
  const progress = options.progress ?? []
  const result = await callTool(
    client,
    'ask_analyst',
    { question },
    { signal: options.signal, onprogress: (p) => progress.push(p.message ?? '') },
  )
  return { result, progress }
}

/** The JSON-RPC error a request was refused with, as the client hands it over. */
export async function refusal(request: Promise<unknown>): Promise<McpError> {
  const outcome = await request.then(
    (result) => ({ refused: false as const, result }),
    (error: unknown) => ({ refused: true as const, error }),
  )
  if (!outcome.refused)
    throw new Error(
      `expected a JSON-RPC error, got the result ${JSON.stringify(outcome.result).slice(0, 300)}`,
    )
  expect(outcome.error).toBeInstanceOf(McpError)
  return outcome.error as McpError
}

/** The code the spec gives a resource that is not there (2025-11-25, resources: error handling). */
const RESOURCE_NOT_FOUND = -32002

/**
 * The protocol errors of the spec, each a case that a transport's test runs through the official
 * client connected to a fresh session (`sessionId`).
 */
export const PROTOCOL_ERROR_CASES: Array<{
  name: string
  run(client: Client, sessionId: string): Promise<void>
}> = [
  {
    name: 'an unknown tool is a JSON-RPC error (-32602) naming the tools, not a tool result',
    async run(client) {
      const error = await refusal(callTool(client, 'rm_rf'))
      expect(error.code).toBe(ErrorCode.InvalidParams)
      expect(error.message).toContain('Unknown tool: rm_rf')
      expect(error.message).toContain(TOOL_NAMES.join(', '))
      // Arguments that do not fit a known tool stay a tool result, for the model to read (SEP-1303).
      const bad = await callTool(client, 'run_python', { code: '' })
      expect(bad.isError).toBe(true)
      expect(textOf(bad)).toContain('Invalid arguments for tool run_python')
    },
  },
  {
    name: 'tools/call without a name is -32602 with a one-line message, not -32603 with a zod dump',
    async run(client) {
      const error = await refusal(
        client.request({ method: 'tools/call', params: {} } as never, CallToolResultSchema),
      )
      expect(error.code).toBe(ErrorCode.InvalidParams)
      expect(error.message).toMatch(/Invalid tools\/call request: params\.name: .*expected string/)
      expect(error.message).not.toContain('\n')
      const bare = await refusal(client.request({ method: 'resources/read' } as never, CallToolResultSchema))
      expect(bare.code).toBe(ErrorCode.InvalidParams)
      expect(bare.message).toMatch(/Invalid resources\/read request: params: /)
    },
  },
  {
    name: 'a missing or foreign resource is -32002 with its uri',
    async run(client, sessionId) {
      for (const uri of [
        `analyst://sessions/${sessionId}/artifacts/nothing.txt`,
        'analyst://sessions/someone-else/artifacts/out/table.csv',
        'file:///etc/passwd',
      ]) {
        const error = await refusal(client.readResource({ uri }))
        expect(error.code, uri).toBe(RESOURCE_NOT_FOUND)
        expect(error.data).toEqual({ uri })
        expect(error.message).toContain(`Resource not found: ${uri}`)
      }
      const invalid = await refusal(client.readResource({ uri: 'not a uri' }))
      expect(invalid.code).toBe(ErrorCode.InvalidParams)
    },
  },
  {
    name: 'a pagination cursor is -32602: the lists come whole, so no cursor is one of ours',
    async run(client) {
      expect((await client.listTools()).nextCursor).toBeUndefined()
      for (const list of [
        () => client.listTools({ cursor: 'page-2' }),
        () => client.listResources({ cursor: 'page-2' }),
        () => client.listResourceTemplates({ cursor: 'page-2' }),
      ]) {
        const error = await refusal(list())
        expect(error.code).toBe(ErrorCode.InvalidParams)
        expect(error.message).toContain('Invalid cursor')
      }
    },
  },
]
