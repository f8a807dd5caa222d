import { describe, expect, it } from 'vitest'
import type { BlobStore, SessionHistory } from '../types.js'
import { exportSession } from './index.js'

const history: SessionHistory = {
  session: {
    id: 's1',
    title: 'Orders',
    owner: null,
    status: 'idle',
    createdAt: '2026-12-04T00:00:00Z',
    updatedAt: '2026-12-04T00:00:00Z',
    questions: 0,
  } as SessionHistory['session'],
  datasets: [],
  runs: [],
  blocked: [],
}
const blobs = { get: async () => undefined } as unknown as BlobStore

describe('exports of an R session', () => {
  it("carry IRkernel's kernelspec in a notebook, and are refused as a Python script", async () => {
    const notebook = JSON.parse(await exportSession(history, 'ipynb', blobs, 'r'))
    expect(notebook.metadata.kernelspec).toEqual({ name: 'ir', display_name: 'R', language: 'R' })
    expect(notebook.metadata.language_info.name).toBe('R')
    const python = JSON.parse(await exportSession(history, 'ipynb', blobs))
    expect(python.metadata.kernelspec.name).toBe('python3')
    await expect(exportSession(history, 'py', blobs, 'r')).rejects.toThrow(
      /does not export as a Python script/,
    )
  })
})
