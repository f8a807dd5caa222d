/**
 * Exports of a stored session: a Jupyter notebook, a Python script, a self-contained HTML report.
 * @module
 */
import type { Store } from '../store.js'
import { toHtml } from './html.js'
import { fileReader, toNotebook } from './ipynb.js'
import { toScript } from './py.js'

export const EXPORT_FORMATS = ['ipynb', 'py', 'html'] as const
export type ExportFormat = (typeof EXPORT_FORMATS)[number]

export const EXPORT_TYPES: Record<ExportFormat, string> = {
  ipynb: 'application/x-ipynb+json',
  py: 'text/x-python; charset=utf-8',
  html: 'text/html; charset=utf-8',
}

/** The session in the format, or undefined when there is no such session (for this owner). */
export function exportSession(
  store: Store,
  id: string,
  format: ExportFormat,
  owner?: string | null,
): string | undefined {
  const prefix = 'artifact:'
  const detail = store.detail(id, (name) => `${prefix}${name}`, owner)
  if (!detail) return undefined
  const blobs = fileReader((url) => {
    const artifact = url.startsWith(prefix) ? store.artifact(id, url.slice(prefix.length)) : undefined
    return artifact?.path
  })
  switch (format) {
    case 'ipynb':
      return `${JSON.stringify(toNotebook(detail, blobs), null, 1)}\n`
    case 'py':
      return toScript(detail)
    case 'html':
      return toHtml(detail, blobs)
  }
}
