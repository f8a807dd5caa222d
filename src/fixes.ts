/**
 * What fixes an error, said once by the layer that knows it (`{ setting: 'timeout' }`) and
 * phrased by each door for its reader: a flag in the terminal, an option for library callers, a
 * request field for HTTP, E2B and MCP clients (or the server's environment variable, when only
 * whoever runs the server can change it), and advice the model can act on. A lower layer never
 * names a CLI flag in a message.
 * @module
 */

/** Who reads the fix. `http`: the HTTP API, the web UI and E2B clients. */
export type Door = 'cli' | 'library' | 'http' | 'mcp' | 'model'

/** A setting that fixes an error, with a value to try when there is one. */
export interface Fix {
  setting: Setting
  /** A value to try, as the user would give it (e.g. `120` seconds, `A10G`). */
  example?: string
}

interface Phrasing {
  /** What to do, in plain words: "Raise the cell's time limit". */
  say: string
  /** The setting's name for each reader; `server` is the environment of `analyst serve` and `analyst mcp`. */
  names: { cli?: string; library?: string; http?: string; mcp?: string; server?: string }
  /** Advice for the model, which can change its code but no setting. */
  model?: string
}

const SETTINGS = {
  timeout: {
    say: "Raise the cell's time limit",
    names: { cli: '--timeout SECONDS', library: 'timeoutMs', http: 'timeoutMs', mcp: 'timeout_ms' },
    model:
      'Make the step faster (vectorize, work on a sample first, aggregate in SQL) or split it into shorter steps.',
  },
  model: {
    say: 'Check the model',
    names: { cli: '--model PROVIDER:MODEL', library: 'model', server: 'ANALYST_MODEL' },
  },
  baseUrl: {
    say: "Check the model server's base URL",
    names: { cli: '--base-url URL', library: 'baseURL', server: 'ANALYST_BASE_URL' },
  },
  apiKey: {
    say: "Check the model provider's API key",
    names: {
      cli: 'OPENAI_API_KEY, ANTHROPIC_API_KEY or ANALYST_API_KEY',
      library: 'apiKey',
      server: 'OPENAI_API_KEY, ANTHROPIC_API_KEY or ANALYST_API_KEY',
    },
  },
  requestTimeout: {
    say: 'Allow model requests more time',
    names: { cli: '--model-timeout SECONDS', library: 'requestTimeoutMs', server: 'ANALYST_MODEL_TIMEOUT' },
  },
  sandbox: {
    say: 'Choose an engine that runs here',
    names: { cli: '--sandbox local|jupyter|e2b|modal', library: 'provider', server: 'ANALYST_SANDBOX' },
  },
  isolation: {
    say: 'Or turn isolation off, only for code you trust',
    names: { cli: '--no-isolation', library: "isolation: 'none'" },
  },
  gpu: {
    say: 'Give the GPUs as TYPE or TYPE:COUNT',
    names: { cli: '--gpu', library: 'gpu', server: 'ANALYST_GPU' },
  },
  image: {
    say: 'Use an image with Python 3, pandas and matplotlib',
    names: { cli: '--image', library: 'image', server: 'ANALYST_MODAL_IMAGE' },
  },
  jupyterKernel: {
    say: "Choose one of the Jupyter server's kernels",
    names: { cli: '--jupyter-kernel', library: 'kernelName', server: 'ANALYST_JUPYTER_KERNEL' },
  },
  modalTool: {
    say: 'Give a deployed Modal function',
    names: { cli: '--modal-tool APP/FUNCTION', library: 'tools' },
  },
  memory: {
    say: "Raise the sandbox's memory limit",
    names: {
      cli: '--memory SIZE',
      library: 'limits.memoryBytes',
      http: "memoryMB, or the server's ANALYST_SANDBOX_MEMORY",
      server: 'ANALYST_SANDBOX_MEMORY',
    },
    model: 'Use less memory: read only the columns you need (usecols), in chunks, or aggregate in SQL.',
  },
  memoryBudget: {
    say: 'Try again once other sandboxes have finished, or raise the memory budget of all sandboxes',
    names: {
      cli: 'ANALYST_MEMORY_BUDGET',
      library: 'ANALYST_MEMORY_BUDGET',
      server: 'ANALYST_MEMORY_BUDGET',
    },
    model:
      'Other sessions held the memory then: run the step again; if it fails again, use less memory (usecols, chunks, aggregate in SQL).',
  },
  hostMemory: {
    say: 'Give the machine more memory, or the sandboxes a memory budget that fits in it',
    names: {
      cli: 'ANALYST_MEMORY_BUDGET',
      library: 'ANALYST_MEMORY_BUDGET',
      server: 'ANALYST_MEMORY_BUDGET',
    },
    model: 'The machine was out of memory: run the step again, using less memory if you can.',
  },
  data: {
    say: 'Give the data file again',
    names: { cli: '--data PATH', library: 'data', http: 'POST /api/sessions/:id/data', mcp: 'add_data' },
  },
  signIn: {
    say: 'Sign in',
    names: { http: 'GET /auth/login' },
  },
  csrfToken: {
    say: "Send the csrfToken that GET /api/me answers, from this server's own pages",
    names: { http: 'X-CSRF-Token' },
  },
  oidc: {
    say: 'Configure sign-in with the identity provider',
    names: {
      server:
        'ANALYST_OIDC_ISSUER, ANALYST_OIDC_CLIENT_ID, ANALYST_OIDC_CLIENT_SECRET and ANALYST_PUBLIC_URL',
    },
  },
  maxSteps: {
    say: 'Allow more steps',
    names: { cli: '--max-steps N', library: 'maxSteps' },
  },
} satisfies Record<string, Phrasing>

export type Setting = keyof typeof SETTINGS

/** The fix in the words of one door, e.g. "Raise the cell's time limit (--timeout SECONDS), e.g. 120." */
export function phraseFix(fix: Fix | undefined, door: Door): string | undefined {
  if (!fix) return undefined
  const phrasing: Phrasing = SETTINGS[fix.setting]
  if (door === 'model') return phrasing.model
  const { names } = phrasing
  const name =
    door === 'http'
      ? (names.http ?? names.server)
      : door === 'mcp'
        ? (names.mcp ?? names.server)
        : names[door]
  const example = fix.example ? `, e.g. ${fix.example}` : ''
  return `${phrasing.say}${name ? ` (${name})` : ''}${example}.`
}

/** What fixes a cell's error (`Execution.error`: data, not a thrown error), from its name and words. */
export function executionFix(error: { name: string; value: string } | undefined): Fix | undefined {
  if (!error) return undefined
  if (error.name === 'TimeoutError') return { setting: 'timeout' }
  if (error.name === 'MemoryError') return { setting: 'memory' }
  if (error.name === 'KernelDied' && /out of memory/.test(error.value)) {
    // Which limit ran out (src/sandbox/local/out-of-memory.ts): each has its own remedy.
    if (/memory budget of all sandboxes .* was full/.test(error.value)) return { setting: 'memoryBudget' }
    if (/the machine ran out of memory/.test(error.value)) return { setting: 'hostMemory' }
    return { setting: 'memory' }
  }
  return undefined
}

/** An error's fix and hint as one text for a door: what to do, in its reader's words. */
export function advice(error: { hint?: string; fix?: Fix }, door: Door): string | undefined {
  const parts = [phraseFix(error.fix, door), error.hint].filter((part): part is string => !!part)
  return parts.length > 0 ? parts.join(' ') : undefined
}
