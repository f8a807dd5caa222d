/**
 * Calling MCP tools through the official client, for tests: the result typed as a tool result,
 * its text in one string.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'

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
