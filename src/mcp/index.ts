/**
 * Analyst as an MCP server: tools and resources over the session service, served over stdio
 * (`analyst mcp`) or Streamable HTTP (`/mcp` on `analyst serve`).
 * @module
 */

export { artifactUri } from './content.js'
export { AllowedFolders } from './folders.js'
export { McpHttp, type McpHttpOptions } from './http.js'
export { MCP_TITLE, McpConnection, type McpConnectionOptions, type McpSources } from './server.js'
export { type StdioOptions, serveStdio } from './stdio.js'
