import { join, resolve } from 'node:path'
import type { AnalysisLanguage } from '../../agent/index.js'
import { AllowedFolders, McpConnection, serveStdio } from '../../mcp/index.js'
import { type ModelChoice, modelTimeoutMs, resolveModel } from '../../models/index.js'
import { sandboxResources } from '../../sandbox/kernel/limits.js'
import { SessionService } from '../../session/index.js'
import { openTemplates } from '../../templates/store.js'
import { openDataSources, splitDataArgs } from '../data-args.js'
import { openHome } from '../home.js'
import { modalToolSettings } from '../modal-tools.js'
import { imageName } from '../render.js'

export interface McpOptions {
  /** Data files the session starts with. */
  data: string[]
  /** Folders from which the client's model may add data files (add_data). */
  allowDir: string[]
  /** The engine (local, e2b, …). @default ANALYST_SANDBOX or local */
  sandbox?: string
  /** The kernel of the Jupyter engine (--jupyter-kernel). */
  jupyterKernel?: string
  /** --gpu and --image (the modal engine). */
  gpu?: string
  image?: string
  /** --modal-tool: functions deployed on Modal, offered to ask_analyst's model as tools. */
  modalTool?: string[]
  /** For ask_analyst. @default ANALYST_MODEL or what is configured */
  model?: string
  baseUrl?: string
  maxSteps: number
  /** --model-timeout in seconds, for ask_analyst. @default ANALYST_MODEL_TIMEOUT, else 120 */
  modelTimeout?: number
  /** --language: what ask_analyst's model writes. @default python */
  language?: AnalysisLanguage
  isolation: 'sandbox' | 'none'
  /** --memory and --cpus: each sandbox's own limits. @default ANALYST_SANDBOX_MEMORY, ANALYST_SANDBOX_CPUS */
  memoryBytes?: number
  milliCpus?: number
  /** --template (ANALYST_TEMPLATE): the template each new session's sandbox starts from. */
  template?: string
  cwd: string
  env?: NodeJS.ProcessEnv
  stdin?: NodeJS.ReadableStream & { pause(): unknown }
  stdout?: NodeJS.WritableStream
}

/**
 * `analyst mcp`: an MCP server over stdio, one Analyst session for the connection (recorded like
 * any other), until the client leaves. stdout carries the protocol and nothing else.
 */
export async function mcp(options: McpOptions): Promise<number> {
  const folders = await AllowedFolders.open(options.allowDir, options.cwd)
  const modal = await modalToolSettings(options.modalTool, options)
  const given = await splitDataArgs(options.data, { cwd: options.cwd, env: options.env })
  const sources = await openDataSources(given.sources)
  const { home, stores, provider } = await openHome(options).catch(async (error: unknown) => {
    await sources?.close()
    throw error
  })
  let model: Promise<ModelChoice> | undefined
  const service = new SessionService({
    history: stores.history,
    blobs: stores.blobs,
    provider,
    sandbox: {
      isolation: options.isolation,
      sources,
      limits: sandboxResources(options, options.env),
      template: options.template,
    },
    // Resolved when first needed: run_python works without one; ask_analyst says what to set.
    model: () =>
      (model ??= resolveModel({ spec: options.model, baseUrl: options.baseUrl, env: options.env }).catch(
        (error: unknown) => {
          model = undefined
          throw error
        },
      )),
    analyst: {
      maxSteps: options.maxSteps,
      requestTimeoutMs: modelTimeoutMs(options.modelTimeout, options.env),
      nameImage: imageName,
      language: options.language,
      ...modal,
    },
    cacheDir: join(home, 'cache'),
    templates: openTemplates(home),
    idleMs: 0,
  })
  const stop = new AbortController()
  const onSignal = () => stop.abort()
  process.once('SIGTERM', onSignal)
  process.once('SIGINT', onSignal)
  try {
    const connection = await McpConnection.open(service, {
      folders,
      data: given.files.map((path) => resolve(options.cwd, path)),
      sources,
    })
    await serveStdio(connection, { stdin: options.stdin, stdout: options.stdout, signal: stop.signal })
    return 0
  } finally {
    process.off('SIGTERM', onSignal)
    process.off('SIGINT', onSignal)
    await service.shutdown()
    await provider.close?.()
    await stores.close()
    await sources?.close()
  }
}
