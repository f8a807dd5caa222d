/**
 * A refusal as a browser should see it, for the server's pages (not /api, /mcp or the E2B routes,
 * whose clients read JSON): a signed-out browser is sent to sign in and brought back, and any
 * other refusal (a sign-in the provider or the allowed groups refused) is a short HTML page that
 * says what happened and what to do, rather than JSON in the tab.
 * @module
 */
import type { Context } from 'hono'
import { escapeHtml } from '../store/export/html.js'

/** Routes whose callers are programs: they always get JSON. */
const PROGRAM_ROUTES = /^\/(api|mcp|v\d+)(\/|$)/

/** The quality the Accept header gives `type` (`text/html`): its own entry, else `text/*`, else `*\/*`. */
function quality(accept: string, type: string): { q: number; named: boolean } {
  let best = { q: 0, rank: -1, named: false }
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.trim().toLowerCase().split(';')
    const rank = range === type ? 2 : range === `${type.split('/')[0]}/*` ? 1 : range === '*/*' ? 0 : -1
    if (rank <= best.rank) continue
    const q = Number(params.find((p) => p.trim().startsWith('q='))?.split('=')[1] ?? 1)
    best = { q: Number.isFinite(q) ? q : 0, rank, named: rank === 2 }
  }
  return best
}

/** A browser's navigation: it names text/html and ranks it above JSON (`fetch` and curl send *\/*). */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false
  const html = quality(accept, 'text/html')
  return html.named && html.q > 0 && html.q >= quality(accept, 'application/json').q
}

/** A page of this server (not an API route), asked for by a browser. */
export function isBrowserPage(c: Context): boolean {
  return (
    (c.req.method === 'GET' || c.req.method === 'HEAD') &&
    !PROGRAM_ROUTES.test(c.req.path) &&
    prefersHtml(c.req.header('accept'))
  )
}

/** Where a signed-out browser goes: the sign-in, then back to the page it asked for. */
export function loginRedirect(c: Context): Response {
  const url = new URL(c.req.url)
  return c.redirect(`/auth/login?next=${encodeURIComponent(url.pathname + url.search)}`, 302)
}

/** A refusal as a page: the message, the hint, and a way to try again. */
export function refusalPage(c: Context, status: number, message: string, hint?: string): Response {
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Analyst: ${escapeHtml(message)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem}</style>
</head><body>
<h1>${status === 401 ? 'Please sign in' : 'Not allowed'}</h1>
<p>${escapeHtml(message)}</p>${hint ? `\n<p>${escapeHtml(hint)}</p>` : ''}
<p><a href="/auth/login">Sign in again</a> · <a href="/">Analyst</a></p>
</body></html>
`
  return c.html(body, status as 401, { 'cache-control': 'no-store' })
}
