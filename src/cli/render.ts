/**
 * The terminal view of an analysis: progress while the model thinks and the code runs (a spinner
 * on a TTY, plain lines otherwise), the code highlighted, its output, saved charts and files, and
 * the answer with any unsupported numbers.
 * @module
 */
import { createEmphasize } from 'emphasize'
import python from 'highlight.js/lib/languages/python'
import pc from 'picocolors'
import yoctoSpinner from 'yocto-spinner'
import { extractCode } from '../agent/index.js'
import { executionFix, phraseFix } from '../fixes.js'
import type { Artifact } from '../sandbox/index.js'
import type { SessionEvent } from '../session/index.js'
import { queryLine } from '../store/export/sql.js'
import type { OutputFolder } from './outputs.js'

const emphasize = createEmphasize()
emphasize.register({ python })

export function highlight(code: string, color: boolean): string {
  const body = color ? emphasize.highlight('python', code).value : code
  return body
    .split('\n')
    .map((line) => `${pc.dim('│')} ${line}`)
    .join('\n')
}

/** Where a step's images are saved; the model is told the same names. */
export function imageName(step: number, index: number): string {
  return `step-${step}-chart-${index}.png`
}

interface Progress {
  update(text: string): void
  pause(): void
  stop(): void
}

function progressFor(stream: NodeJS.WriteStream | NodeJS.WritableStream, interactive: boolean): Progress {
  if (!interactive) {
    let last = ''
    return {
      update(text) {
        const plain = text.replace(/ · \d+(\.\d+)?s$/, '')
        if (plain !== last) stream.write(pc.dim(`… ${plain}\n`))
        last = plain
      },
      pause() {},
      stop() {},
    }
  }
  const spinner = yoctoSpinner({ stream: stream as NodeJS.WriteStream })
  let running = false
  return {
    update(text) {
      spinner.text = text
      if (!running) spinner.start()
      running = true
    },
    pause() {
      if (running) spinner.stop()
      running = false
    },
    stop() {
      if (running) spinner.stop()
      running = false
    },
  }
}

export interface RendererOptions {
  stdout: NodeJS.WritableStream
  stderr: NodeJS.WritableStream
  folder: OutputFolder
  /** Reads a file the running step saved in its sandbox. */
  readFile: (path: string) => Promise<Uint8Array>
  /** Spinner and colors (a TTY). */
  interactive: boolean
  /** Print events; when false (--json) only save files. */
  print: boolean
}

export class AnalysisRenderer {
  private readonly progress: Progress
  private modelText = ''
  private phase = ''
  private phaseStarted = Date.now()
  private ticker: NodeJS.Timeout | undefined
  private readonly imagesPerStep = new Map<number, number>()
  private stepLabel = ''
  /** Where each artifact was saved, by name. */
  readonly saved = new Map<string, string>()

  constructor(private readonly options: RendererOptions) {
    this.progress = options.print
      ? progressFor(options.stderr, options.interactive)
      : { update() {}, pause() {}, stop() {} }
  }

  private write(text: string) {
    if (!this.options.print) return
    this.progress.pause()
    this.options.stdout.write(text)
    if (this.phase) this.showPhase()
  }

  private showPhase() {
    const seconds = ((Date.now() - this.phaseStarted) / 1000).toFixed(1)
    this.progress.update(`${this.stepLabel} · ${this.phase} · ${seconds}s`)
  }

  private setPhase(phase: string) {
    this.phase = phase
    this.phaseStarted = Date.now()
    if (!this.options.print) return
    this.showPhase()
    if (this.options.interactive && !this.ticker)
      this.ticker = setInterval(() => this.phase && this.showPhase(), 100)
  }

  private async saveArtifact(artifact: Artifact) {
    const path = await this.options.folder
      .saveArtifact(artifact, this.options.readFile)
      .catch(() => undefined)
    if (path) {
      this.saved.set(artifact.name, path)
      this.write(pc.cyan(`[file ${artifact.name} saved: ${path}]\n`))
    }
  }

  /** Renders one event; saving a chart or file finishes before the next event is shown. */
  async handle(event: SessionEvent): Promise<void> {
    switch (event.type) {
      case 'preparing':
        if (this.options.print)
          this.options.stderr.write(pc.dim(`Analyst · model ${event.model} · ${event.message}\n`))
        return
      case 'ready':
        if (event.replayed.failed > 0 && this.options.print) {
          this.options.stderr.write(
            pc.yellow(
              `${event.replayed.failed} of ${event.replayed.ran} earlier cells failed when re-run; some variables may be missing.\n`,
            ),
          )
        }
        return
      case 'run-start':
        return
      case 'step-start':
        this.stepLabel = `step ${event.step}/${event.maxSteps}`
        this.modelText = ''
        this.setPhase('waiting for the model')
        return
      case 'model-text':
        this.modelText = event.text
        return
      case 'code': {
        const prose = extractCode(this.modelText).prose
        this.write(`\n${pc.bold(`── step ${event.step} ${'─'.repeat(40)}`)}\n`)
        if (prose) this.write(`${pc.dim(prose)}\n`)
        this.write(`${highlight(event.code, this.options.interactive)}\n`)
        this.setPhase('running the code')
        return
      }
      case 'guard':
        for (const v of event.violations) {
          this.write(pc.yellow(`[blocked] line ${v.line}:${v.column} ${v.rule}: ${v.message}\n`))
        }
        return
      case 'stdout':
        return this.write(event.text)
      case 'stderr':
        return this.write(pc.yellow(event.text))
      case 'result': {
        const { result } = event
        if (result.png || result.jpeg || result.svg) {
          const index = (this.imagesPerStep.get(event.step) ?? 0) + 1
          this.imagesPerStep.set(event.step, index)
          const name = imageName(event.step, index).replace(/\.png$/, '')
          const path = await this.options.folder.saveImage(result, name)
          if (path) this.write(pc.cyan(`[chart saved: ${path}]\n`))
        } else if (result.text !== undefined) {
          this.write(`${result.isMainResult ? pc.green('Out: ') : ''}${result.text}\n`)
        }
        return
      }
      case 'error': {
        const fix = phraseFix(executionFix(event.error), 'cli')
        return this.write(
          pc.red(`${event.error.traceback || `${event.error.name}: ${event.error.value}`}\n`) +
            (fix ? `  ${fix}\n` : ''),
        )
      }
      case 'artifact':
        return this.saveArtifact(event.artifact)
      case 'observation':
        return
      case 'answer':
        this.phase = ''
        this.progress.stop()
        this.write(`\n${pc.bold(`── answer ${'─'.repeat(40)}`)}\n${event.text}\n`)
        if (event.unsupportedNumbers.length > 0) {
          this.write(
            pc.yellow(
              `\n⚠ Not found in any output of the code: ${event.unsupportedNumbers.join(', ')} (check these before you rely on them)\n`,
            ),
          )
        }
        return
      case 'done': {
        const { result } = event
        const tokens = result.usage.totalTokens.toLocaleString('en-US')
        this.write(
          pc.dim(
            `\n${result.steps.length} code steps · ${tokens} tokens · files in ${this.options.folder.dir}\n`,
          ),
        )
        return
      }
      case 'step-end':
        // What the step's sql() calls did, after its outputs: where, how many rows, how long.
        for (const query of event.record.execution?.queries ?? [])
          this.write(pc.dim(`[${queryLine(query)}]\n`))
        return
      case 'usage':
      case 'model-text-delta':
        return
    }
  }

  /** Stops the spinner. */
  close() {
    clearInterval(this.ticker)
    this.ticker = undefined
    this.phase = ''
    this.progress.stop()
  }
}
