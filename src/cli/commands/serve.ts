import pc from 'picocolors'
import { createLogger, startServer, tokensFromEnv } from '../../server/index.js'

export interface ServeOptions {
  host: string
  port: number
  /** The sandbox engine. @default ANALYST_SANDBOX or local */
  sandbox?: string
  /** Folders from which MCP clients may add data files (add_data on /mcp). */
  allowDir?: string[]
  /** How long a stop waits for questions being answered. @default 20 s */
  graceMs?: number
  /** PostgreSQL, shared by replicas. @default ANALYST_DATABASE_URL */
  databaseUrl?: string
}

/** `analyst serve`: runs until SIGTERM or SIGINT, then stops gracefully. */
export async function serve(options: ServeOptions): Promise<number> {
  const tokens = tokensFromEnv()
  const server = await startServer({
    host: options.host,
    port: options.port,
    tokens,
    engine: options.sandbox,
    databaseUrl: options.databaseUrl,
    logger: createLogger(),
    allowDirs: options.allowDir,
  })
  process.stderr.write(
    `${pc.bold('Analyst')} serving on ${pc.cyan(server.url)}  ${pc.dim(tokens.length ? `(${tokens.length} token(s) required)` : '(no tokens: loopback only)')}\n`,
  )
  await new Promise<void>((resolve) => {
    const stop = async (signal: string) => {
      process.stderr.write(
        pc.dim(`\n${signal}: finishing ${server.service.busy} question(s) in progress, then stopping…\n`),
      )
      await server.drain(options.graceMs ?? (Number(process.env.ANALYST_GRACE_MS) || 20_000))
      resolve()
    }
    process.once('SIGTERM', () => void stop('SIGTERM'))
    process.once('SIGINT', () => void stop('SIGINT'))
  })
  return 0
}
