import { describe, expect, it } from 'vitest'
import { prefersHtml } from './browser-refusal.js'

describe('prefersHtml', () => {
  it.each([
    // Chromium's and Firefox's navigations
    ['text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8', true],
    ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', true],
    // fetch(), curl, the E2B and MCP clients
    ['*/*', false],
    [undefined, false],
    ['application/json', false],
    ['application/json, text/event-stream', false],
    // JSON ranked first, or HTML refused
    ['application/json, text/html;q=0.5', false],
    ['text/html;q=0, */*', false],
    ['TEXT/HTML', true],
  ])('%s → %s', (accept, expected) => {
    expect(prefersHtml(accept)).toBe(expected)
  })
})
