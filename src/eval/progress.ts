/**
 * An eval's progress on stderr. On a terminal: one line redrawn in place, a bar with done/total,
 * the running ABQ, tokens and elapsed time (and a pause for a rate limit). Elsewhere: one line per
 * question as it ends. Quiet (`--json` off a terminal): nothing.
 * @module
 */
import pc from 'picocolors'
import { clock, count, percent } from './format.js'
import type { EvalEvent, QuestionResult } from './harness.js'

const BAR = 24

export interface ProgressOptions {
  stream: NodeJS.WritableStream
  /** A terminal: redraw one line. */
  interactive: boolean
  /** Print nothing (only the bar, on a terminal). */
  quiet: boolean
}

export class EvalProgress {
  private total = 0
  private done = 0
  private right = 0
  private tokens = 0
  private running = 0
  private readonly started = Date.now()
  private pausedUntil = 0
  private ticker: NodeJS.Timeout | undefined
  private lastDraw = 0
  private stopped = false

  constructor(private readonly options: ProgressOptions) {}

  handle(event: EvalEvent) {
    switch (event.type) {
      case 'start':
        this.total = event.total
        this.done = event.done
        this.right = event.results.filter((r) => r.correct).length
        this.tokens = event.results.reduce((sum, r) => sum + r.tokens, 0)
        if (this.options.interactive) {
          this.ticker = setInterval(() => this.draw(true), 1000)
          this.ticker.unref()
        }
        break
      case 'question-start':
        this.running++
        break
      case 'tokens':
        this.tokens += event.tokens
        break
      case 'question-done':
        this.running--
        this.done++
        if (event.result.correct) this.right++
        if (!this.options.interactive && !this.options.quiet)
          this.options.stream.write(`${line(event.result)}\n`)
        break
    }
    this.draw(event.type !== 'tokens')
  }

  /** A rate limit paused the model calls. */
  paused(ms: number) {
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + ms)
    if (!this.options.interactive && !this.options.quiet)
      this.options.stream.write(pc.dim(`… rate limited: model calls wait ${Math.ceil(ms / 1000)} s\n`))
    this.draw(true)
  }

  private draw(force: boolean) {
    if (!this.options.interactive || !this.total || this.stopped) return
    const now = Date.now()
    if (!force && now - this.lastDraw < 100) return
    this.lastDraw = now
    const filled = Math.round((this.done / this.total) * BAR)
    const bar = `${'█'.repeat(filled)}${'░'.repeat(BAR - filled)}`
    const abq = this.done ? percent(this.right / this.done) : '-'
    const waiting =
      this.pausedUntil > now
        ? pc.yellow(` · rate limited ${Math.ceil((this.pausedUntil - now) / 1000)} s`)
        : ''
    const text = `${bar} ${this.done}/${this.total} · ABQ ${abq} · ${count(this.tokens)} tokens · ${clock(now - this.started)} · ${this.running} running${waiting}`
    this.options.stream.write(`\r\x1b[2K${text}`)
  }

  /** Ends the line (once). */
  stop() {
    clearInterval(this.ticker)
    if (this.options.interactive && this.total && !this.stopped) {
      this.draw(true)
      this.options.stream.write('\n')
    }
    this.stopped = true
  }
}

/** One finished question, in one line. */
function line(result: QuestionResult): string {
  const head = `${result.id} (${result.level}) · ${result.steps} step(s) · ${(result.durationMs / 1000).toFixed(1)} s`
  if (result.error) return pc.red(`✗ ${head} · crashed: ${result.error}`)
  if (result.correct) return pc.green(`✓ ${head}`)
  const wrong = result.subAnswers
    .filter((sub) => !sub.correct)
    .map((sub) => `${sub.name}: expected ${sub.expected}, got ${sub.got ?? 'nothing'}`)
    .join('; ')
  return pc.yellow(`✗ ${head} · ${wrong}`)
}
