#!/usr/bin/env node
// The `analyst` command. The only place that calls process.exit.
import { AnalystError } from '../errors.js'
import { advice } from '../fixes.js'
import { main } from './cli.js'
import { ExitError } from './errors.js'

const ISSUES = 'https://github.com/analyst-dev/analyst/issues'

function report(error: unknown): number {
  if (error instanceof ExitError) {
    if (error.message) process.stderr.write(`analyst: ${error.message}\n`)
    if (error.hint) process.stderr.write(`  ${error.hint}\n`)
    return error.code
  }
  if (AnalystError.isInstance(error)) {
    process.stderr.write(`analyst: ${error.message}\n`)
    const what = advice(error, 'cli')
    if (what) process.stderr.write(`  ${what}\n`)
    return 2
  }
  process.stderr.write(`analyst: internal error, please report it at ${ISSUES}\n`)
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  return 70
}

// The library's warnings (an engine that isolates less, say) read as the command's own, without
// Node's "(node:PID)" prefix and its --trace-warnings advice; other warnings as Node prints them.
process.removeAllListeners('warning')
process.on('warning', (warning) => {
  if (warning.name === 'AnalystWarning') process.stderr.write(`analyst: warning: ${warning.message}\n`)
  else process.stderr.write(`(node:${process.pid}) ${warning.name}: ${warning.message}\n`)
})

let code: number
try {
  code = await main(process.argv.slice(2))
} catch (error) {
  code = report(error)
}
// Exit once stdout has been written out (a pipe may still hold it), whatever handles are left.
process.stdout.write('', () => process.exit(code))
