import pc from 'picocolors'
import type { AnalysisLanguage } from '../../agent/index.js'
import { modelTimeoutMs } from '../../models/index.js'
import { createLogger, startServer, tokensFromEnv } from '../../server/index.js'
import { avoidOomKiller } from '../../server/oom.js'
import { sourceArgs } from '../data-args.js'
import { modalToolSettings } from '../modal-tools.js'

export interface ServeOptions {
  host: string
  port: number
  /** The sandbox engine. @default ANALYST_SANDBOX or local */
  sandbox?: string
  /** The kernel of the Jupyter engine (--jupyter-kernel). */
  jupyterKernel?: string
  /** --gpu and --image (the modal engine). @default ANALYST_GPU, ANALYST_MODAL_IMAGE */
  gpu?: string
  image?: string
  /** --memory and --cpus: each sandbox's own limits. @default ANALYST_SANDBOX_MEMORY, ANALYST_SANDBOX_CPUS */
  memoryBytes?: number
  milliCpus?: number
  /** --modal-tool: functions deployed on Modal, offered to every session's model as tools. */
  modalTool?: string[]
  /** --model-timeout in seconds. @default ANALYST_MODEL_TIMEOUT, else 120 */
  modelTimeout?: number
  /** --language: what the sessions' model writes. @default python */
  language?: AnalysisLanguage
  /** Folders from which MCP clients may add data files (add_data on /mcp). */
  allowDir?: string[]
  /** How long a stop waits for questions being answered. @default 20 s */
  graceMs?: number
  /** PostgreSQL, shared by replicas. @default ANALYST_DATABASE_URL */
  databaseUrl?: string
  /** E2B clients that ask for allowInternetAccess get a sandbox with network. @default false */
  allowNetwork?: boolean
  /** API clients (/api/templates, E2B's Template.build) may build templates: code they send runs in a build jail. @default false */
  allowTemplateBuilds?: boolean
  /** --data: sources every session may query (named ones come from ANALYST_SOURCES). */
  data?: string[]
  cwd?: string
  /** --template (ANALYST_TEMPLATE): the template of sessions that do not name one. */
  template?: string
}

/** `analyst serve`: runs until SIGTERM or SIGINT, then stops gracefully. */
export async function serve(options: ServeOptions): Promise<number> {
  const tokens = tokensFromEnv()
  // Kernels started from here raise their own score again (an unprivileged raise).
  avoidOomKiller()
  // Each function looked up before the server starts; with them, every session's model works in tools mode.
  const modal = await modalToolSettings(options.modalTool, {})
  const defaults = sourceArgs(options.data ?? [], { cwd: options.cwd ?? process.cwd() })
  const server = await startServer({
    host: options.host,
    port: options.port,
    tokens,
    engine: options.sandbox,
    engineOptions: { jupyterKernel: options.jupyterKernel, gpu: options.gpu, image: options.image },
    sandbox: { limits: { memoryBytes: options.memoryBytes, milliCpus: options.milliCpus } },
    analyst: { ...modal, language: options.language, requestTimeoutMs: modelTimeoutMs(options.modelTimeout) },
    ...(options.template ? { sandbox: { template: options.template } } : {}),
    databaseUrl: options.databaseUrl,
    logger: createLogger(),
    allowDirs: options.allowDir,
    allowNetwork: options.allowNetwork,
    allowTemplateBuilds: options.allowTemplateBuilds,
    ...(defaults.length ? { sources: { defaults } } : {}),
  })
  process.stderr.write(
    `${pc.bold('Analyst')} serving on ${pc.cyan(server.url)}  ${pc.dim(
      process.env.ANALYST_OIDC_ISSUER
        ? `(sign-in with ${process.env.ANALYST_OIDC_ISSUER}${tokens.length ? ` and ${tokens.length} token(s)` : ''})`
        : tokens.length
          ? `(${tokens.length} token(s) required)`
          : '(no tokens: loopback only)',
    )}\n`,
  )
  if (server.sources) {
    process.stderr.write(pc.dim(`Sources: ${server.sources.names().join(', ')}\n`))
    // Each source is reached once now, so that a wrong URL or password is said at start.
    void server.sources.verify().then((failures) => {
      for (const failure of failures)
        process.stderr.write(`${pc.yellow('warning')}: source ${failure.name}: ${failure.error}\n`)
    })
  }
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
