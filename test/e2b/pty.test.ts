/**
 * PTYs through the official E2B SDK (`sandbox.pty`) against `analyst serve`: a real
 * pseudo-terminal in the sandbox's jail, made by the kernel, over envd's process protocol.
 */
import { CommandExitError, Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { waitFor } from '../support/wait.js'
import { serverWithSandbox } from './server.js'

const served = serverWithSandbox(() => Sandbox.create())
const typed = (text: string) => new TextEncoder().encode(text)

/** A terminal and everything it has printed so far. */
async function terminal(options: { cols?: number; rows?: number; envs?: Record<string, string> } = {}) {
  const decoder = new TextDecoder()
  const seen = { output: '' }
  const handle = await served.sandbox.pty.create({
    cols: options.cols ?? 80,
    rows: options.rows ?? 24,
    envs: options.envs,
    onData: (data) => {
      seen.output += decoder.decode(data, { stream: true })
    },
  })
  return { handle, seen }
}

describe('E2B SDK: PTYs', () => {
  it('runs an interactive shell in a terminal of the size asked for, with the environment given', async () => {
    const { handle, seen } = await terminal({ cols: 91, rows: 33, envs: { ABC: '123' } })
    await served.sandbox.pty.sendInput(handle.pid, typed('echo "[$ABC]"; stty size; tty; pwd\nexit\n'))
    await handle.wait()
    expect(handle.exitCode).toBe(0)
    expect(seen.output).toContain('[123]')
    expect(seen.output).toContain('33 91')
    expect(seen.output).toMatch(/\/dev\/pts\/\d+/)
    expect(seen.output).toContain('/home/user')
  })

  it('resizes the terminal, and its programs see the new size', async () => {
    const { handle, seen } = await terminal()
    await served.sandbox.pty.resize(handle.pid, { cols: 120, rows: 40 })
    await served.sandbox.pty.sendInput(handle.pid, typed('tput cols; tput lines\nexit\n'))
    await handle.wait()
    expect(seen.output).toMatch(/120\r\n40\r\n/)
  })

  it('is the controlling terminal: ^C stops the program in the foreground, the shell goes on', async () => {
    const { handle, seen } = await terminal()
    await served.sandbox.pty.sendInput(handle.pid, typed('sleep 300; echo slept\n'))
    await waitFor(
      () =>
        served.sandbox.commands.run('pgrep -x sleep').then(
          () => true,
          () => false,
        ),
      { what: 'the sleep to start in the terminal' },
    )
    await served.sandbox.pty.sendInput(handle.pid, typed('\x03'))
    await served.sandbox.pty.sendInput(handle.pid, typed('echo "after $((6 * 7))"\nexit\n'))
    await handle.wait().catch(() => {}) // bash exits with the status of the interrupted command's line
    expect(seen.output).toContain('after 42')
    expect(seen.output).not.toMatch(/\nslept\r/) // the echo of the typed line has it; its output does not
  })

  it('reconnects to a running terminal with a new listener', async () => {
    const { handle, seen } = await terminal({ envs: { FOO: 'bar' } })
    await served.sandbox.pty.sendInput(handle.pid, typed('echo first-$FOO\n'))
    await waitFor(() => seen.output.includes('first-bar'), {
      what: () => `first-bar in ${JSON.stringify(seen.output)}`,
    })
    await handle.disconnect()
    let again = ''
    const reconnected = await served.sandbox.pty.connect(handle.pid, {
      onData: (data) => {
        again += new TextDecoder().decode(data)
      },
    })
    await served.sandbox.pty.sendInput(handle.pid, typed('echo second-$FOO\nexit\n'))
    await reconnected.wait()
    expect(reconnected.pid).toBe(handle.pid)
    expect(again).toContain('second-bar')
    expect(again).not.toContain('first-bar')
  })

  it('kills a terminal and what runs in it; killing one that is not there answers false', async () => {
    const { handle } = await terminal()
    expect(await served.sandbox.pty.kill(handle.pid)).toBe(true)
    await expect(handle.wait()).rejects.toThrow(CommandExitError)
    await expect(served.sandbox.commands.run(`kill -0 ${handle.pid}`)).rejects.toThrow(CommandExitError)
    expect(await served.sandbox.pty.kill(999_999)).toBe(false)
  })
})
