/**
 * Exports of a stored session: a Jupyter notebook, a Python script, a self-contained HTML report.
 * They take the session's records; charts are read from the blob store first, as they are inlined.
 * @module
 */
import { buffer } from 'node:stream/consumers'
import { InvalidArgumentError } from '../../errors.js'
import type { BlobStore, SessionHistory, StoredArtifact } from '../types.js'
import { toHtml } from './html.js'
import { toNotebook } from './ipynb.js'
import { toScript } from './py.js'

export const EXPORT_FORMATS = ['ipynb', 'py', 'html'] as const
export type ExportFormat = (typeof EXPORT_FORMATS)[number]

export const EXPORT_TYPES: Record<ExportFormat, string> = {
  ipynb: 'application/x-ipynb+json',
  py: 'text/x-python; charset=utf-8',
  html: 'text/html; charset=utf-8',
}

export function isExportFormat(format: string): format is ExportFormat {
  return (EXPORT_FORMATS as readonly string[]).includes(format)
}

/** The session in the format. */
export async function exportSession(
  history: SessionHistory,
  format: ExportFormat,
  blobs: BlobStore,
  /** The language of the session's code (the notebook's kernelspec). @default 'python' */
  language: 'python' | 'r' = 'python',
): Promise<string> {
  if (format === 'py') {
    // The script re-runs the analysis in Python: an R session's cells would not run there.
    if (language !== 'python') {
      throw new InvalidArgumentError(
        `An ${language.toUpperCase()} session does not export as a Python script`,
        {
          hint: 'Export it as ipynb (with R’s kernelspec) or html.',
        },
      )
    }
    return toScript(history)
  }
  const images = new Map<string, Buffer>()
  for (const run of history.runs)
    for (const step of run.steps)
      for (const result of step.results) {
        const sha256 = result.image?.sha256
        if (!sha256 || images.has(sha256)) continue
        const stream = await blobs.get(sha256)
        if (stream) images.set(sha256, await buffer(stream))
      }
  const image = (artifact: StoredArtifact) => images.get(artifact.sha256)
  return format === 'ipynb'
    ? `${JSON.stringify(toNotebook(history, image, language), null, 1)}\n`
    : toHtml(history, image)
}
