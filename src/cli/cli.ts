/**
 * The command line: declarations only. Each action checks its options, lazily imports its command
 * and calls it, so `analyst --help` loads no sandbox code.
 * @module
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander'
import { ENGINE_NAMES } from '../providers.js'
import { parseCpus, parseSize } from '../sandbox/kernel/limits.js'
import { UsageError } from './errors.js'

const VERSION = '0.1.0'

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value]
}

function whole(value: string): number {
  const number = Number(value)
  if (!Number.isInteger(number) || number <= 0)
    throw new InvalidArgumentError('give a whole number, 1 or more.')
  return number
}

function port(value: string): number {
  const number = Number(value)
  if (!Number.isInteger(number) || number < 0 || number > 65535)
    throw new InvalidArgumentError('give a port number from 0 to 65535.')
  return number
}

function seconds(value: string): number {
  const number = Number(value)
  if (!Number.isFinite(number) || number <= 0)
    throw new InvalidArgumentError('give a positive number of seconds.')
  return number
}

/** --model-timeout, on every command that calls a model. */
function modelTimeoutOption(): Option {
  return new Option(
    '--model-timeout <seconds>',
    'how long a model call waits for an answer, or a streamed one for its next part (default ANALYST_MODEL_TIMEOUT, else 120)',
  ).argParser(seconds)
}

function questionIds(value: string): number[] {
  const ids = value.split(',').map((id) => id.trim())
  if (ids.some((id) => !/^\d+$/.test(id)))
    throw new InvalidArgumentError('give question ids separated by commas, e.g. 0,5,7.')
  return ids.map(Number)
}

/** --sandbox: the engine that runs code; the names come from the provider registry. */
function engineOption(): Option {
  return new Option('--sandbox <engine>', 'where code runs (default ANALYST_SANDBOX, else local)').choices(
    ENGINE_NAMES,
  )
}

/** --language: what the model writes (and `run`'s files are in); cells run in that language's kernel. */
function languageOption(what = 'the language the model writes its analysis in'): Option {
  return new Option('--language <language>', `${what} (default ANALYST_LANGUAGE, else python)`)
    .choices(['python', 'r'])
    .env('ANALYST_LANGUAGE')
}

/** --jupyter-kernel: an engine setting, passed to the engine through EngineOptions. */
function jupyterKernelOption(): Option {
  return new Option(
    '--jupyter-kernel <name>',
    'the kernel to start with --sandbox jupyter (default ANALYST_JUPYTER_KERNEL, else python3)',
  )
}

/** --gpu and --image: the modal engine's settings (other engines refuse --gpu). */
function gpuOption(): Option {
  return new Option(
    '--gpu <type[:count]>',
    'GPUs for the sandbox with --sandbox modal: T4, L4, A10G, A100, A100-80GB, H100… (default ANALYST_GPU)',
  )
}

function imageOption(): Option {
  return new Option(
    '--image <tag>',
    'the image of --sandbox modal sandboxes, e.g. a GPU image with torch (default ANALYST_MODAL_IMAGE, else Python 3.11 with the data stack)',
  )
}

/** --modal-tool: for every command that runs the analyst (ask, chat, serve, mcp, eval). */
function modalToolOption(): Option {
  return new Option(
    '--modal-tool <app/function>',
    'a function deployed on Modal, offered to the model as a tool; =DESCRIPTION tells what it does (repeatable; MODAL_TOKEN_ID/SECRET)',
  ).argParser(collect)
}

function memorySize(value: string): number {
  const bytes = parseSize(value)
  if (bytes === undefined) throw new InvalidArgumentError('give a size such as 4G, 512M or 1.5GiB.')
  return bytes
}

function cpus(value: string): number {
  const milli = parseCpus(value)
  if (milli === undefined) throw new InvalidArgumentError('give a number of cores such as 2 or 0.5.')
  return milli
}

/** --memory and --cpus: each sandbox's own limits, for every command that makes sandboxes. */
function resourceOptions(command: Command): Command {
  return command
    .option(
      '--memory <size>',
      'memory each sandbox may use, e.g. 4G or 512M (default ANALYST_SANDBOX_MEMORY, else 2G)',
      memorySize,
    )
    .option(
      '--cpus <cores>',
      'CPU time each sandbox may use, in cores, e.g. 2 or 0.5 (default ANALYST_SANDBOX_CPUS, else no quota)',
      cpus,
    )
}

/** --template: the environment sandboxes start from, on every command that takes --sandbox. */
function templateOption(): Option {
  return new Option(
    '--template <name>',
    "the template sandboxes start from (analyst template list; default ANALYST_TEMPLATE, else the engine's own environment)",
  ).env('ANALYST_TEMPLATE')
}

/** The engine settings every command that takes --sandbox passes on. */
function engineFlags(options: Record<string, unknown>) {
  return {
    template: options.template as string | undefined,
    jupyterKernel: options.jupyterKernel as string | undefined,
    gpu: options.gpu as string | undefined,
    image: options.image as string | undefined,
    memoryBytes: options.memory as number | undefined,
    milliCpus: options.cpus as number | undefined,
  }
}

/** The program, with `onCommand` receiving each command's normalized options (tests replace it). */
export function program(onCommand: (name: string, options: unknown) => Promise<number>) {
  const cli = new Command('analyst')
    .description('An open code interpreter for data analysis.')
    .version(VERSION)
    .exitOverride()
    .showSuggestionAfterError()
    .configureOutput({ writeErr: () => {} }) // errors are reported once, by bin.ts
  let result: Promise<number> = Promise.resolve(0)

  resourceOptions(cli.command('run'))
    .description('Run Python files as cells, in order, in one fresh sandbox; - reads a cell from stdin')
    .argument('<files...>', 'Python files, run in order; state carries from one to the next')
    .option('--data <path>', 'a data file, readable by the code at data/<name> (repeatable)', collect)
    .option('--timeout <seconds>', 'time limit per cell', seconds, 60)
    .option('--json', 'one JSON object per cell on stdout, nothing else')
    .option('--output-dir <dir>', 'where images and files are saved (default ./analyst-output/<session id>)')
    .addOption(
      new Option(
        '--no-isolation',
        'run without the jail (only trusted code, on machines without namespaces)',
      ),
    )
    .option('--guard', 'check each file with the static guard first; a file with violations is not run')
    .addOption(languageOption('the language the files are in'))
    .addOption(engineOption())
    .addOption(templateOption())
    .addOption(jupyterKernelOption())
    .addOption(gpuOption())
    .addOption(imageOption())
    .addHelpText(
      'after',
      '\nExamples:\n  analyst run analysis.py --data sales.csv\n  echo "print(1 + 1)" | analyst run -',
    )
    .action((files: string[], options: Record<string, unknown>) => {
      result = onCommand('run', {
        files,
        data: (options.data as string[] | undefined) ?? [],
        timeoutMs: (options.timeout as number) * 1000,
        json: Boolean(options.json),
        outputDir: options.outputDir as string | undefined,
        isolation: options.isolation === false ? 'none' : 'sandbox',
        guard: Boolean(options.guard),
        language: options.language as 'python' | 'r' | undefined,
        sandbox: options.sandbox as string | undefined,
        ...engineFlags(options),
        cwd: process.cwd(),
      })
    })

  cli
    .command('check')
    .description('check Python files with the static guard alone: network, processes, escapes, paths')
    .argument('<files...>', 'Python files; - reads code from stdin')
    .option('--json', 'one JSON array, one object per file: { file, violations: [...] }')
    .option(
      '--allow-module <name>',
      'allow a module or dotted name that a rule forbids (repeatable)',
      collect,
    )
    .option('--allow-network', 'the sandbox has network: allow network modules and URLs')
    .addHelpText(
      'after',
      [
        '\nExit status: 0 no violations, 1 violations, 2 usage error.',
        '\nExamples:\n  analyst check cell.py\n  analyst check cells/*.py --json',
      ].join('\n'),
    )
    .action((files: string[], options: Record<string, unknown>) => {
      result = onCommand('check', {
        files,
        json: Boolean(options.json),
        allowModules: (options.allowModule as string[] | undefined) ?? [],
        allowNetwork: Boolean(options.allowNetwork),
        cwd: process.cwd(),
      })
    })

  /** Options shared by ask and chat. */
  const analysisOptions = (command: Command) =>
    resourceOptions(command)
      .option('--data <path>', 'a data file the analysis may read (repeatable)', collect)
      .option('--session <id>', 'continue a stored session (see analyst history); its data comes along')
      .option(
        '--model <spec>',
        'provider:model, e.g. openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, ollama:qwen2.5-coder (default ANALYST_MODEL)',
      )
      .option(
        '--base-url <url>',
        'chat completions server for openai-compatible models (default ANALYST_BASE_URL)',
      )
      .addOption(
        new Option(
          '--mode <mode>',
          'how code reaches the sandbox: a tool call, or fenced code in text',
        ).choices(['tools', 'text']),
      )
      .option('--max-steps <n>', 'code steps at most before stopping', whole, 8)
      .option('--vision', 'show the charts to the model (for models that read images)')
      .option('--json', 'one JSON object per answer on stdout, nothing else')
      .option(
        '--output-dir <dir>',
        'where charts and files are saved (default ./analyst-output/<session id>)',
      )
      .option('--timeout <seconds>', 'time limit per code step', seconds, 60)
      .option('--no-guard', 'do not check model code with the static guard before running it')
      .option('--no-stream', 'wait for whole model replies instead of streaming them')
      .addOption(modelTimeoutOption())
      .addOption(new Option('--no-isolation', 'run without the jail (only for trusted models and data)'))
      .addOption(languageOption())
      .addOption(engineOption())
      .addOption(templateOption())
      .addOption(jupyterKernelOption())
      .addOption(gpuOption())
      .addOption(imageOption())
      .addOption(modalToolOption())
      .addOption(
        new Option('--replay <file>', 'replay recorded model replies instead of calling a model').hideHelp(),
      )
  const analysis = (options: Record<string, unknown>) => ({
    data: (options.data as string[] | undefined) ?? [],
    model: options.model as string | undefined,
    baseUrl: options.baseUrl as string | undefined,
    mode: options.mode as 'tools' | 'text' | undefined,
    maxSteps: options.maxSteps as number,
    vision: Boolean(options.vision),
    json: Boolean(options.json),
    outputDir: options.outputDir as string | undefined,
    timeoutMs: (options.timeout as number) * 1000,
    guard: options.guard !== false,
    language: options.language as 'python' | 'r' | undefined,
    stream: options.stream !== false,
    modelTimeout: options.modelTimeout as number | undefined,
    isolation: options.isolation === false ? 'none' : 'sandbox',
    sandbox: options.sandbox as string | undefined,
    ...engineFlags(options),
    modalTool: options.modalTool as string[] | undefined,
    replay: options.replay as string | undefined,
    session: options.session as string | undefined,
    cwd: process.cwd(),
  })

  analysisOptions(
    cli
      .command('ask')
      .description(
        'answer a question about data files: the model writes Python, the sandbox runs it, the answer cites the numbers',
      )
      .argument('<question>', 'the question, in quotes'),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  analyst ask "What is the average order value by customer segment?" --data orders.csv\n\nExit status: 0 answered, 1 stopped at --max-steps without an answer, 2 usage or set-up error.',
    )
    .action((question: string, options: Record<string, unknown>) => {
      result = onCommand('ask', { question, ...analysis(options) })
    })

  analysisOptions(
    cli
      .command('chat')
      .description(
        'ask follow-up questions in one session; each line of stdin is a question when it is not a terminal',
      ),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  analyst chat --data orders.csv\n  printf "How many orders?\\nAnd by region?\\n" | analyst chat --data orders.csv --json',
    )
    .action((options: Record<string, unknown>) => {
      result = onCommand('chat', analysis(options))
    })

  cli
    .command('history')
    .description('list stored sessions, newest first')
    .option('--json', "as JSON, with each session's summary")
    .action((options: Record<string, unknown>) => {
      result = onCommand('history', { json: Boolean(options.json) })
    })

  cli
    .command('show')
    .description('a stored session: questions, steps, answers, and a summary')
    .argument('<session>', 'session id (or a unique prefix)')
    .option('--json', 'as JSON')
    .action((session: string, options: Record<string, unknown>) => {
      result = onCommand('show', { session, json: Boolean(options.json) })
    })

  cli
    .command('export')
    .description('export a stored session as a Jupyter notebook, a Python script or an HTML report')
    .argument('<session>', 'session id (or a unique prefix)')
    .addOption(
      new Option('--format <format>', 'what to write').choices(['ipynb', 'py', 'html']).makeOptionMandatory(),
    )
    .option('--out <file>', 'write here instead of stdout')
    .addOption(languageOption("the session's language (the notebook's kernel)"))
    .action((session: string, options: Record<string, unknown>) => {
      result = onCommand('export', {
        session,
        format: options.format,
        out: options.out,
        language: options.language as 'python' | 'r' | undefined,
        cwd: process.cwd(),
      })
    })

  resourceOptions(cli.command('serve'))
    .description('the HTTP API (with streaming) and the web UI; tokens from ANALYST_TOKEN')
    .option('--host <host>', 'address to listen on (anything but loopback needs ANALYST_TOKEN)', '127.0.0.1')
    .option('--port <port>', 'port (0 picks a free one)', port, 8787)
    .option(
      '--allow-dir <dir>',
      "a folder from which MCP clients' models may add data files with add_data (repeatable)",
      collect,
    )
    .addOption(languageOption("the language the sessions' model writes"))
    .addOption(engineOption())
    .addOption(templateOption())
    .addOption(jupyterKernelOption())
    .addOption(gpuOption())
    .addOption(imageOption())
    .addOption(modalToolOption())
    .addOption(modelTimeoutOption())
    .option(
      '--database-url <url>',
      'PostgreSQL for replicas: postgres://… (default ANALYST_DATABASE_URL; else SQLite)',
    )
    .option(
      '--allow-network',
      'give E2B clients that ask for allowInternetAccess: true a sandbox with network (off: refused)',
    )
    .option(
      '--allow-template-builds',
      "let API clients build templates (/api/templates, E2B's Template.build): their steps run in a build jail with network for package fetches, bounded by ANALYST_TEMPLATE_BUILD_TIMEOUT (s), _DISK_MB and _MEMORY_MB (off: refused with 403)",
    )
    .option(
      '--data <source>',
      "a source every session's code may query with sql(): postgres://…, mysql://…, sqlite:FILE, duckdb:FILE or a CSV/Parquet/NDJSON file, NAME=… to name it (repeatable; named sources: ANALYST_SOURCES)",
      collect,
    )
    .addHelpText(
      'after',
      '\nExamples:\n  analyst serve --port 8787\n  ANALYST_SOURCES=sources.json analyst serve\n  analyst serve --data shop=postgres://analyst@db/shop --data events.parquet\n  analyst serve --sandbox modal --gpu A10G --modal-tool sd/generate="makes an image from a prompt"',
    )
    .action((options: Record<string, unknown>) => {
      result = onCommand('serve', {
        language: options.language as 'python' | 'r' | undefined,
        host: options.host,
        port: options.port,
        sandbox: options.sandbox,
        ...engineFlags(options),
        modalTool: options.modalTool as string[] | undefined,
        modelTimeout: options.modelTimeout as number | undefined,
        databaseUrl: options.databaseUrl,
        allowDir: (options.allowDir as string[] | undefined) ?? [],
        allowNetwork: options.allowNetwork === true,
        allowTemplateBuilds: options.allowTemplateBuilds === true,
        data: (options.data as string[] | undefined) ?? [],
        cwd: process.cwd(),
      })
    })

  resourceOptions(cli.command('mcp'))
    .description(
      'an MCP server over stdio for Claude Desktop, Cursor, VS Code: run_python, data files, ask_analyst',
    )
    .option('--data <path>', 'a data file the session starts with (repeatable)', collect)
    .option(
      '--allow-dir <dir>',
      "a folder from which the client's model may add data files with add_data (repeatable)",
      collect,
    )
    .option('--model <spec>', 'the model for ask_analyst, provider:model (default ANALYST_MODEL)')
    .option(
      '--base-url <url>',
      'chat completions server for openai-compatible models (default ANALYST_BASE_URL)',
    )
    .option('--max-steps <n>', 'code steps at most per ask_analyst question', whole, 8)
    .addOption(modelTimeoutOption())
    .addOption(new Option('--no-isolation', 'run without the jail (only for trusted clients and data)'))
    .addOption(languageOption("the language ask_analyst's model writes"))
    .addOption(engineOption())
    .addOption(templateOption())
    .addOption(jupyterKernelOption())
    .addOption(gpuOption())
    .addOption(imageOption())
    .addOption(modalToolOption())
    .addHelpText(
      'after',
      '\nExamples:\n  analyst mcp --data sales.csv\n  analyst mcp --allow-dir ~/data --model openai:gpt-4.1-mini\n\nstdout carries the protocol; messages go to stderr.',
    )
    .action((options: Record<string, unknown>) => {
      result = onCommand('mcp', {
        language: options.language as 'python' | 'r' | undefined,
        data: (options.data as string[] | undefined) ?? [],
        allowDir: (options.allowDir as string[] | undefined) ?? [],
        model: options.model as string | undefined,
        baseUrl: options.baseUrl as string | undefined,
        maxSteps: options.maxSteps as number,
        modelTimeout: options.modelTimeout as number | undefined,
        isolation: options.isolation === false ? 'none' : 'sandbox',
        sandbox: options.sandbox as string | undefined,
        ...engineFlags(options),
        modalTool: options.modalTool as string[] | undefined,
        cwd: process.cwd(),
      })
    })

  const evaluate = cli
    .command('eval')
    .description(
      "run a benchmark set (InfiAgent-DABench's shape): each question in its own session, scored the benchmark's way",
    )
    .argument('[dir]', 'the set: a *questions*.jsonl, a *labels*.jsonl and tables/ (optional with --resume)')
    .option('--model <spec>', 'provider:model, as for ask (default ANALYST_MODEL)')
    .option(
      '--base-url <url>',
      'chat completions server for openai-compatible models (default ANALYST_BASE_URL)',
    )
    .addOption(new Option('--mode <mode>', 'how code reaches the sandbox').choices(['tools', 'text']))
    .option('--concurrency <n>', 'questions asked at once, each in its own sandbox', whole, 1)
    .option('--limit <n>', 'the first N questions only', whole)
    .addOption(
      new Option('--level <level>', 'questions of one level only').choices(['easy', 'medium', 'hard']),
    )
    .option('--ids <ids>', 'only these question ids, e.g. 0,5,7', questionIds)
    .option('--max-steps <n>', 'code steps at most per question (default 8)', whole)
    .option('--timeout <seconds>', 'time limit per code step (default 60)', seconds)
    .addOption(modelTimeoutOption())
    .option(
      '--resume <run>',
      'continue a stopped run (its id or a unique prefix); finished questions are kept',
    )
    .option(
      '--owner <user>',
      'whose run this is: a user of analyst serve over the same store (their email, or user:ID); its sessions are theirs',
    )
    .option('--out <dir>', 'write results.json and a self-contained report.html there')
    .option('--json', 'one JSON object with the scores and every result on stdout')
    .option(
      '--data <source>',
      "a source every question's code may query with sql(): postgres://…, mysql://…, sqlite:FILE, duckdb:FILE or a data file, NAME=… to name it (repeatable; give it again with --resume)",
      collect,
    )
    .addOption(languageOption())
    .addOption(engineOption())
    .addOption(templateOption())
    .addOption(jupyterKernelOption())
    .addOption(gpuOption())
    .addOption(imageOption())
    .addOption(modalToolOption())
    .addOption(new Option('--replay <file>', 'answer from recorded replies instead of a model').hideHelp())
    .addHelpText(
      'after',
      '\nExamples:\n  analyst eval ../datasets/dabench --model openai:gpt-4.1-mini --concurrency 4 --out eval-report\n  analyst eval --resume 3f2a1b2c\n  analyst eval compare 3f2a1b2c 9d8e7f6a\n\nExit status: 0 every question answered (right or wrong), 130 stopped (resume it), 2 usage or set-up error.',
    )
    .action((dir: string | undefined, options: Record<string, unknown>) => {
      result = onCommand('eval', { dir, ...options, json: Boolean(options.json), cwd: process.cwd() })
    })
  evaluate
    .command('compare')
    .description('two eval runs side by side: the score difference, and which questions flipped')
    .argument('<runA>', 'eval run id (or a unique prefix)')
    .argument('<runB>', 'eval run id (or a unique prefix)')
    .option('--json', 'as JSON')
    // `eval` itself takes --json wherever it stands: read it with the parent's options.
    .action((a: string, b: string, _options: unknown, command: Command) => {
      result = onCommand('eval-compare', { a, b, json: Boolean(command.optsWithGlobals().json) })
    })

  cli
    .command('doctor')
    .description(
      'check Python, pandas, matplotlib, bubblewrap and namespaces (or, with --sandbox, that engine), and say how to fix what is wrong',
    )
    .option('--json', 'the checks as JSON')
    .option(
      '--data <source>',
      'a database to check as --data takes it (repeatable); warns when its role can write. ANALYST_SOURCES is checked too',
      collect,
    )
    .addOption(engineOption())
    .addOption(templateOption())
    .addOption(jupyterKernelOption())
    .addOption(gpuOption())
    .addOption(imageOption())
    .action((options: Record<string, unknown>) => {
      result = onCommand('doctor', {
        json: Boolean(options.json),
        sandbox: options.sandbox as string | undefined,
        data: (options.data as string[] | undefined) ?? [],
        cwd: process.cwd(),
        ...engineFlags(options),
      })
    })

  cli
    .command('profile')
    .description(
      'what the model is told about data: files as pandas will read them (columns, dtypes, nulls, ranges, samples, warnings), databases by their tables (columns, keys, row estimates, samples, comments)',
    )
    .argument(
      '<paths...>',
      'data files (CSV, TSV, JSON, NDJSON, Excel .xlsx, Parquet, or gzip/zip of them) and sources as --data takes them: postgres://…, mysql://…, sqlite:PATH, duckdb:PATH, NAME=URL',
    )
    .option('--json', 'one JSON array with one object per file and per source')
    .option('--tokens <n>', 'token budget per file for the text form (default 1500)', (value: string) => {
      const n = Number(value)
      if (!Number.isInteger(n) || n < 50)
        throw new InvalidArgumentError('give a whole number of tokens, 50 or more.')
      return n
    })
    .addHelpText(
      'after',
      `\nExamples:\n  analyst profile sales.csv\n  analyst profile data/*.csv --json\n  analyst profile 'shop=postgres://analyst@db/shop' sqlite:local.db\n\nA password comes from the environment: PGPASSWORD, MYSQL_PWD, or \${VAR} in the URL.`,
    )
    .action((paths: string[], options: Record<string, unknown>) => {
      result = onCommand('profile', {
        paths,
        json: Boolean(options.json),
        tokensPerFile: options.tokens as number | undefined,
        cwd: process.cwd(),
      })
    })

  const template = cli
    .command('template')
    .description('environments that sandboxes start from: build, list, show, rm, export, import')
  template
    .command('build')
    .description(
      'build a template from a spec file (YAML or JSON), a Containerfile, or a recipe shipped with Analyst (modern, r)',
    )
    .argument('<spec>', 'a spec file, a Containerfile, or a recipe name: modern, r')
    .option('--name <name>', "the name to use it by (--template NAME); default: the spec's own name")
    .option('--force', 'build again even when the same spec and inputs are built already')
    .option('--quiet', "do not print each step's log")
    .addHelpText(
      'after',
      '\nExamples:\n  analyst template build modern\n  analyst template build team.yaml --name team\n  analyst template build Containerfile --name tools\n\npip steps use PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_TRUSTED_HOST and PIP_FIND_LINKS unless the spec sets them.',
    )
    .action((spec: string, options: Record<string, unknown>) => {
      result = onCommand('template-build', {
        spec,
        name: options.name as string | undefined,
        force: Boolean(options.force),
        quiet: Boolean(options.quiet),
        cwd: process.cwd(),
      })
    })
  template
    .command('list')
    .description('the templates built here, newest first')
    .option('--json', 'as JSON')
    .action((options: Record<string, unknown>) => {
      result = onCommand('template-list', { json: Boolean(options.json), cwd: process.cwd() })
    })
  template
    .command('show')
    .description("a template: its base, Python, languages, size, environment and main packages' versions")
    .argument('<name>', 'a name or an id (or a unique prefix of one, 12 characters or more)')
    .option('--json', 'as JSON')
    .action((name: string, options: Record<string, unknown>) => {
      result = onCommand('template-show', { name, json: Boolean(options.json), cwd: process.cwd() })
    })
  template
    .command('rm')
    .description('remove names; a template goes with its last name (or when given by id)')
    .argument('<names...>', 'names or ids')
    .action((names: string[]) => {
      result = onCommand('template-rm', { names, cwd: process.cwd() })
    })
  template
    .command('prune')
    .description(
      'remove build cache entries (base roots, apt layers) that no built template came from, and say how much space that freed; the cache prunes itself after a build once past ANALYST_TEMPLATE_CACHE_MB (default 10240)',
    )
    .option('--all', 'also remove templates that no name points at (then what only they came from)')
    .option('--json', 'as JSON')
    .action((options: Record<string, unknown>) => {
      result = onCommand('template-prune', {
        all: Boolean(options.all),
        json: Boolean(options.json),
        cwd: process.cwd(),
      })
    })
  template
    .command('export')
    .description('write a template as an OCI image archive (podman load takes it too)')
    .argument('<name>', 'a name or an id')
    .argument('<out>', 'the archive to write, e.g. modern.tar')
    .action((name: string, out: string) => {
      result = onCommand('template-export', { name, out, cwd: process.cwd() })
    })
  template
    .command('import')
    .description('read a template that analyst template export wrote, with the same id')
    .argument('<file>', 'the archive')
    .option('--name <name>', 'the name to use it by (default: the name it was exported under)')
    .action((file: string, options: Record<string, unknown>) => {
      result = onCommand('template-import', {
        file,
        name: options.name as string | undefined,
        cwd: process.cwd(),
      })
    })

  return { cli, result: () => result }
}

async function dispatch(name: string, options: unknown): Promise<number> {
  switch (name) {
    case 'run':
      return (await import('./commands/run.js')).run(options as import('./commands/run.js').RunOptions)
    case 'ask':
      return (await import('./commands/ask.js')).ask(options as import('./commands/ask.js').AskOptions)
    case 'chat':
      return (await import('./commands/chat.js')).chat(options as import('./commands/ask.js').AnalysisOptions)
    case 'history':
      return (await import('./commands/history.js')).history(
        options as import('./commands/history.js').HistoryOptions,
      )
    case 'show':
      return (await import('./commands/history.js')).show(
        options as import('./commands/history.js').ShowOptions,
      )
    case 'export':
      return (await import('./commands/history.js')).exportCommand(
        options as import('./commands/history.js').ExportOptions,
      )
    case 'serve':
      return (await import('./commands/serve.js')).serve(
        options as import('./commands/serve.js').ServeOptions,
      )
    case 'mcp':
      return (await import('./commands/mcp.js')).mcp(options as import('./commands/mcp.js').McpOptions)
    case 'doctor':
      return (await import('./commands/doctor.js')).doctor(
        options as import('./commands/doctor.js').DoctorOptions,
      )
    case 'check':
      return (await import('./commands/check.js')).check(
        options as import('./commands/check.js').CheckOptions,
      )
    case 'profile':
      return (await import('./commands/profile.js')).profile(
        options as import('./commands/profile.js').ProfileOptions,
      )
    case 'eval':
      return (await import('./commands/eval.js')).evalCommand(
        options as import('./commands/eval.js').EvalOptions,
      )
    case 'eval-compare':
      return (await import('./commands/eval.js')).compareCommand(
        options as import('./commands/eval.js').CompareOptions,
      )
    case 'template-build':
      return (await import('./commands/template.js')).templateBuild(
        options as import('./commands/template.js').TemplateBuildOptions,
      )
    case 'template-list':
      return (await import('./commands/template.js')).templateList(
        options as import('./commands/template.js').TemplateListOptions,
      )
    case 'template-show':
      return (await import('./commands/template.js')).templateShow(
        options as import('./commands/template.js').TemplateShowOptions,
      )
    case 'template-rm':
      return (await import('./commands/template.js')).templateRemove(
        options as import('./commands/template.js').TemplateRemoveOptions,
      )
    case 'template-prune':
      return (await import('./commands/template.js')).templatePrune(
        options as import('./commands/template.js').TemplatePruneOptions,
      )
    case 'template-export':
      return (await import('./commands/template.js')).templateExport(
        options as import('./commands/template.js').TemplateExportOptions,
      )
    case 'template-import':
      return (await import('./commands/template.js')).templateImport(
        options as import('./commands/template.js').TemplateImportOptions,
      )
    default:
      throw new UsageError(`Unknown command: ${name}`)
  }
}

/** Runs the command that argv names; resolves to the exit code. */
export async function main(argv: string[], onCommand = dispatch): Promise<number> {
  const { cli, result } = program(onCommand)
  if (argv.length === 0) {
    process.stdout.write(cli.helpInformation())
    return 0
  }
  try {
    await cli.parseAsync(argv, { from: 'user' })
  } catch (error) {
    if (error instanceof CommanderError) {
      if (['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(error.code)) return 0
      throw new UsageError(
        error.message.replace(/^error: /, ''),
        'Run analyst --help for the commands and their options.',
      )
    }
    throw error
  }
  return result()
}
