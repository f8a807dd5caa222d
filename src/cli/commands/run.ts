import { readFile, stat } from 'node:fs/promises'
import { basename, join, resolve } from 'node:path'
import { text as readStream } from 'node:stream/consumers'
import pc from 'picocolors'
import { executionFix, phraseFix } from '../../fixes.js'
import { checkCode, formatViolations, type Violation } from '../../guard/index.js'
import { createProvider } from '../../providers.js'
import { type Result, Sandbox } from '../../sandbox/index.js'
import { openDataSources, splitDataArgs } from '../data-args.js'
import { UsageError } from '../errors.js'
import { OutputFolder } from '../outputs.js'

export interface RunOptions {
  files: string[]
  data: string[]
  timeoutMs: number
  json: boolean
  /** Default: ./analyst-output/<session id> */
  outputDir?: string
  isolation: 'sandbox' | 'none'
  /** --template (ANALYST_TEMPLATE): the template the sandbox starts from. */
  template?: string
  /** The engine (local, e2b, …). @default ANALYST_SANDBOX or local */
  sandbox?: string
  /** --jupyter-kernel */
  jupyterKernel?: string
  /** --gpu and --image (the modal engine) */
  gpu?: string
  image?: string
  env?: NodeJS.ProcessEnv
  /** Check each cell with the static guard first; a cell with violations is not run and fails (Python only). */
  guard?: boolean
  /** The language the files are in: their cells run in its kernel. @default python */
  language?: 'python' | 'r'
  cwd: string
  stdin?: NodeJS.ReadableStream
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
}

interface Cell {
  file: string
  code: string
}

async function readCells(options: RunOptions): Promise<Cell[]> {
  const cells: Cell[] = []
  for (const file of options.files) {
    if (file === '-') {
      cells.push({ file: '-', code: await readStream(options.stdin ?? process.stdin) })
      continue
    }
    try {
      cells.push({ file, code: await readFile(resolve(options.cwd, file), 'utf8') })
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      throw new UsageError(
        code === 'ENOENT' ? `No such file: ${file}` : `Cannot read ${file} (${code})`,
        'Give the path of a Python file, or - to read the cell from stdin.',
      )
    }
  }
  return cells
}

async function checkData(paths: string[], cwd: string): Promise<string[]> {
  const resolved: string[] = []
  for (const path of paths) {
    const full = resolve(cwd, path)
    const info = await stat(full).catch(() => undefined)
    if (!info) throw new UsageError(`No such data file: ${path}`)
    if (!info.isFile())
      throw new UsageError(
        `--data ${path} is not a file`,
        'Pass each data file on its own: --data a.csv --data b.csv',
      )
    resolved.push(full)
  }
  const names = resolved.map((path) => basename(path))
  const duplicate = names.find((name, index) => names.indexOf(name) !== index)
  if (duplicate)
    throw new UsageError(
      `Two data files are both named ${duplicate}`,
      `Inside the sandbox both would be data/${duplicate}; rename one.`,
    )
  return resolved
}

/** Short text for a result on the terminal: its text form, or what kind of output it is. */
function describe(result: Result): string | undefined {
  if (result.text !== undefined) return result.text
  const formats = result.formats()
  return formats.length > 0 ? `<${formats.join(', ')} output>` : undefined
}

/** `analyst run`: each file is one cell, in one sandbox; state carries from file to file. */
export async function run(options: RunOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout
  const stderr = options.stderr ?? process.stderr
  const cells = await readCells(options)
  const given = await splitDataArgs(options.data, { cwd: options.cwd, env: options.env })
  const data = await checkData(given.files, options.cwd)
  const sources = await openDataSources(given.sources, { stderr })
  const violations: Violation[][] = []
  if (options.guard && options.language && options.language !== 'python') {
    throw new UsageError(
      `--guard checks Python only, not ${options.language}`,
      'Leave --guard out: R runs in the same jail and under the same limits, which are the barrier.',
    )
  }
  for (const cell of options.guard ? cells : []) violations.push(await checkCode(cell.code))
  // One command, one sandbox: a warm pool would only start a kernel nobody uses.
  const sandbox = await Sandbox.create({
    provider: await createProvider(options.sandbox, {
      env: options.env,
      poolSize: 0,
      jupyterKernel: options.jupyterKernel,
      gpu: options.gpu,
      image: options.image,
    }),
    data,
    isolation: options.isolation,
    sources,
    template: options.template,
  }).catch(async (error: unknown) => {
    await sources?.close()
    throw error
  })
  const folder = new OutputFolder(
    resolve(options.cwd, options.outputDir ?? join('analyst-output', sandbox.sandboxId)),
  )
  let failed = false
  try {
    for (const [index, cell] of cells.entries()) {
      const cellName = `cell-${index + 1}`
      if (!options.json && cells.length > 1) stdout.write(pc.dim(`── ${cell.file} ──\n`))
      const found = violations[index] ?? []
      if (found.length > 0) {
        // Nothing of this cell runs: the guard's report stands in for its output.
        if (options.json) stdout.write(`${JSON.stringify({ file: cell.file, violations: found })}\n`)
        else
          stderr.write(
            pc.red(`${formatViolations({ file: cell.file, violations: found })}${cell.file}: not run\n`),
          )
        failed = true
        continue
      }
      const saving: Array<Promise<void>> = []
      let images = 0
      const imageName = () => `${cellName}-image-${++images}`
      const execution = await sandbox.runCode(cell.code, {
        ...(options.language && options.language !== 'python' ? { language: options.language } : {}),
        timeoutMs: options.timeoutMs,
        onStdout: options.json ? undefined : (message) => stdout.write(message.line),
        onStderr: options.json ? undefined : (message) => stderr.write(message.line),
        onResult: options.json
          ? undefined
          : (result) => {
              if (!result.png && !result.jpeg && !result.svg) {
                const text = describe(result)
                if (text !== undefined)
                  stdout.write(`${result.isMainResult ? pc.green('Out: ') : ''}${text}\n`)
                return
              }
              saving.push(
                folder.saveImage(result, imageName()).then((path) => {
                  stdout.write(pc.cyan(`[image saved: ${path}]\n`))
                }),
              )
            },
      })
      await Promise.all(saving)
      const artifacts = []
      for (const artifact of execution.artifacts) {
        const savedPath = await folder
          .saveArtifact(artifact, (path) => sandbox.files.read(path, { format: 'bytes' }))
          .catch(() => undefined)
        artifacts.push({ ...artifact, savedPath })
        if (!options.json && savedPath)
          stdout.write(pc.cyan(`[file ${artifact.name} (${artifact.size} bytes) saved: ${savedPath}]\n`))
      }
      if (options.json) {
        const saved: string[] = []
        for (const result of execution.results) {
          if (!result.png && !result.jpeg && !result.svg) continue
          const path = await folder.saveImage(result, imageName())
          if (path) saved.push(path)
        }
        stdout.write(
          `${JSON.stringify({ file: cell.file, ...execution.toJSON(), artifacts, images: saved })}\n`,
        )
      } else if (execution.error) {
        const { name, value, traceback } = execution.error
        stderr.write(pc.red(`${traceback || `${name}: ${value}`}\n`))
        if (traceback && !traceback.includes(value)) stderr.write(pc.red(`${name}: ${value}\n`))
        const fix = phraseFix(executionFix(execution.error), 'cli')
        if (fix) stderr.write(`  ${fix}\n`)
      }
      if (execution.error) failed = true
    }
  } finally {
    await sandbox.kill()
    await sources?.close()
  }
  return failed ? 1 : 0
}
