/**
 * MCP over stdio, the transport of Claude Desktop, Cursor and VS Code: one connection per process.
 * The SDK's transport does not notice the end of stdin; a client that goes away ends stdin (or
 * sends SIGTERM), and either ends the connection here.
 * @module
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import type { McpConnection } from './server.js'

export interface StdioOptions {
  stdin?: NodeJS.ReadableStream & { pause(): unknown }
  stdout?: NodeJS.WritableStream
  /** Ends the connection when aborted (a signal to the process). */
  signal?: AbortSignal
}

/** Serves the connection until the client leaves; then ends it (its sandbox stops). */
export async function serveStdio(connection: McpConnection, options: StdioOptions = {}): Promise<void> {
  const stdin = options.stdin ?? process.stdin
  const transport = new StdioServerTransport(
    stdin as typeof process.stdin,
    options.stdout as typeof process.stdout,
  )
  const closed = new Promise<void>((resolve) => {
    connection.server.server.onclose = resolve
  })
  await connection.server.connect(transport)
  const close = () => void connection.server.close()
  stdin.once('end', close)
  stdin.once('close', close)
  options.signal?.addEventListener('abort', close, { once: true })
  try {
    await closed
  } finally {
    stdin.off('end', close)
    stdin.off('close', close)
    options.signal?.removeEventListener('abort', close)
    await connection.end()
  }
}
