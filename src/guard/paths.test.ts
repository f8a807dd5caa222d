import { describe, expect, test } from 'vitest'
import { classifyPath } from './paths.js'

const policy = { workspace: '/home/user', allowPaths: ['/tmp', '/dev/null'] }
const kind = (value: string, complete = true) => {
  const verdict = classifyPath(value, complete, policy)
  return verdict.kind === 'outside' ? `outside:${verdict.how}` : verdict.kind
}

describe('classifyPath', () => {
  test.each([
    ['data/sales.csv', 'ok'],
    ['out.csv', 'ok'],
    ['./a/../b.csv', 'ok'],
    ['data/../out.csv', 'ok'],
    ['', 'ok'],
    ['/home/user/data/x.csv', 'ok'],
    ['/home/user', 'ok'],
    ['/tmp/x.png', 'ok'],
    ['/dev/null', 'ok'],
    ['~/out.csv', 'ok'],
    ['~', 'ok'],
    ['/etc/passwd', 'outside:absolute'],
    ['/home/user/../other/x', 'outside:absolute'],
    ['/home/username/x', 'outside:absolute'],
    ['/tmpfoo/x', 'outside:absolute'],
    ['/dev/sda', 'outside:absolute'],
    ['/', 'outside:absolute'],
    ['//etc//passwd', 'outside:absolute'],
    ['..', 'outside:escape'],
    ['../x.csv', 'outside:escape'],
    ['data/../../x', 'outside:escape'],
    ['../user/x.csv', 'outside:escape'],
    ['~root/.ssh/id_rsa', 'outside:home'],
    ['https://example.com/x.csv', 'network'],
    ['S3://bucket/key', 'network'],
    ['file:///etc/passwd', 'outside:absolute'],
    ['file://localhost/home/user/x.csv', 'ok'],
    ['sqlite:///analysis.db', 'ok'],
    ['C:\\data\\x.csv', 'ok'],
  ])('%s → %s', (value, expected) => {
    expect(kind(value)).toBe(expected)
  })

  test.each([
    // f'/{x}' could be /home/user/…; f'/etc/{x}' cannot.
    ['/', 'ok'],
    ['/home/', 'ok'],
    ['/etc/', 'outside:absolute'],
    ['/e', 'outside:absolute'],
    ['../', 'outside:escape'],
    ['..', 'ok'], // '..' may go on as '..x'
    ['data/', 'ok'],
    ['~', 'ok'],
    ['~ro', 'ok'],
  ])('prefix %s… → %s', (value, expected) => {
    expect(kind(value, false)).toBe(expected)
  })
})
