import { describe, expect, it } from 'vitest'
import { aptCommand, fetchKind } from './steps.js'

describe('which RUN steps fetch packages (and so get the network)', () => {
  it.each([
    [aptCommand(['python3-tabulate']), 'apt'],
    // What E2B's aptInstall and pipInstall send.
    [
      'apt-get update && DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes apt-get install -y --no-install-recommends vim',
      'apt',
    ],
    ['pip install numpy pandas', 'pip'],
    ['pip install --user numpy', 'pip'],
    ["pip install 'polars>=1.0'", 'pip'],
    ['python3 -m pip install -r /opt/req.txt', 'pip'],
    ['/opt/venv/bin/pip3 install x', 'pip'],
    ['apt-get update && pip install x', 'pip'],
  ])('%s: %s', (command, kind) => {
    expect(fetchKind(command)).toBe(kind)
  })

  it.each([
    'curl https://example.org | sh',
    'pip install x && curl https://example.org',
    'pip install x; python3 -c "import socket"',
    'pip install $(cat list)',
    'pip download x',
    'apt-get source x',
    'python3 setup.py install',
    'echo pip install x',
    '',
  ])('no network for %j', (command) => {
    expect(fetchKind(command)).toBeUndefined()
  })
})
