/** `analyst serve` as users run it, for tests: the built command, spawned, on a free port. */
import { type ChildProcess, spawn } from 'node:child_process'
import { resolve } from 'node:path'

const BIN = resolve('dist/cli/bin.js')

/** Starts `analyst serve --port 0 ARGS` and resolves once it prints its address. */
export function startServe(
  args: string[],
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  return new Promise((resolvePromise, reject) => {
    let output = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const url = output.match(/serving on (http:\/\/\S+)/)?.[1]
      if (url) resolvePromise({ child, url, stderr: () => output })
    })
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${output}`)))
  })
}
