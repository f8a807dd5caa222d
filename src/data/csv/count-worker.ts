/**
 * Counts a CSV file's records in a worker thread, so that the count (a pass over the whole file) runs
 * beside the sampling instead of after it.
 * @module
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import { countRecords } from './count.js'

interface Job {
  path: string
  delimiter: string
}

if (!isMainThread && parentPort && (workerData as { countRecords?: Job } | undefined)?.countRecords) {
  const { path, delimiter } = (workerData as { countRecords: Job }).countRecords
  const port = parentPort
  countRecords(path, delimiter).then(
    (records) => port.postMessage({ records }),
    (error: unknown) => port.postMessage({ error: error instanceof Error ? error.message : String(error) }),
  )
}

/**
 * `countRecords` in a worker thread; in this thread when the compiled worker is not there (running
 * from TypeScript sources, in tests).
 */
export function countRecordsInWorker(path: string, delimiter: string, signal?: AbortSignal): Promise<number> {
  const url = new URL(import.meta.url)
  if (!url.pathname.endsWith('.js') || !existsSync(fileURLToPath(url)))
    return countRecords(path, delimiter, signal)
  return new Promise((resolve, reject) => {
    const worker = new Worker(url, { workerData: { countRecords: { path, delimiter } } })
    const abort = () => {
      void worker.terminate()
      reject(signal?.reason ?? new Error('aborted'))
    }
    signal?.addEventListener('abort', abort, { once: true })
    worker.once('message', (message: { records?: number; error?: string }) => {
      signal?.removeEventListener('abort', abort)
      void worker.terminate()
      if (message.records !== undefined) resolve(message.records)
      else reject(new Error(message.error ?? 'the count failed'))
    })
    worker.once('error', (error) => {
      signal?.removeEventListener('abort', abort)
      reject(error)
    })
  })
}
